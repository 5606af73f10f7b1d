// The `troupe` binary's commands plus the test models (test_models.h): a program that
// registers its own C++ models, then runs the command line (launch/main.h).
#include "launch/main.h"
#include "tests/train/test_models.h"

int main(int argc, char** argv) {
  troupe::train::testing::RegisterTestModels();
  return troupe::launch::Main(argc, argv);
}
