// Shared by the tf.function guide tests (tests/graph/guide_*_test.cc): tensor builders and the
// GuideTest fixture, whose log holds Print output and host-side "print" lines in call order.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/tensor.h"
#include "graph/print_op.h"

namespace troupe::guide_testing {

inline Tensor Floats(std::vector<float> v, TensorShape shape) {
  return *Tensor::FromVector(v, shape);
}
inline Tensor Ints(std::vector<int32_t> v, TensorShape shape) {
  return *Tensor::FromVector(v, shape);
}
inline std::vector<float> Vec(const Tensor& t) {
  return {t.flat<float>().begin(), t.flat<float>().end()};
}

// Captures Print output and host-side "print" lines in one ordered log.
class GuideTest : public ::testing::Test {
 protected:
  void SetUp() override {
    old_ = SetPrintSink([this](std::string_view l) { log_.emplace_back(l); });
  }
  void TearDown() override { SetPrintSink(old_); }
  void HostPrint(const std::string& line) { log_.push_back(line); }
  std::vector<std::string> TakeLog() { return std::exchange(log_, {}); }

  std::vector<std::string> log_;
  PrintSink old_;
};

}  // namespace troupe::guide_testing
