// The `troupe` binary's commands plus the test models (test_models.h): what a program that
// registers its own C++ models runs. launch/main.cc provides main().
#include "tests/actors/test_models.h"

namespace {

const bool registered = [] {
  troupe::actors::testing::RegisterTestModels();
  return true;
}();

}  // namespace
