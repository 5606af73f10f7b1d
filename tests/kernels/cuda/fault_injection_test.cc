// GPU kernel faults (kernels/cuda/fault_injection.h): TROUPE_GPU_INJECT_FAULT's parsing and its
// registration-time errors (no GPU needed), and on a GPU a real fault queued after the N-th
// Conv2DBackpropFilter call, reported with the device and TROUPE_GPU_SYNC advice by whichever
// CUDA call sees it first, in a child process that then exits normally.
#include "kernels/cuda/fault_injection.h"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/logging.h"
#include "tests/kernels/cuda/gpu_test_util.h"

namespace troupe::gpu_testing {
namespace {

TEST(GpuFaultSpec, Parses) {
  auto spec = gpu::ParseFaultSpec("Conv2DBackpropFilter:30");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->op, "Conv2DBackpropFilter");
  EXPECT_EQ(spec->call, 30);
  for (const char* bad : {"Conv2DBackpropFilter", ":3", "Conv2D:", "Conv2D:0", "Conv2D:-2",
                          "Conv2D:3x", "Conv2D: 3", "Conv2D:99999999999999999999"}) {
    auto r = gpu::ParseFaultSpec(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find(std::string("TROUPE_GPU_INJECT_FAULT='") + bad + "'"),
              std::string::npos)
        << r.status();
    EXPECT_NE(r.status().message().find("<OpName>:<N>"), std::string::npos) << r.status();
  }
}

// Installs the fault handling on a registry holding one fake GPU kernel, with `env` as
// TROUPE_GPU_INJECT_FAULT, and returns what was logged at WARNING and above.
std::string InstallWith(OpRegistry& registry, const char* env, int* calls) {
  EXPECT_TRUE(registry
                  .RegisterKernel("FakeOp", Device::Type::kGpu,
                                  [calls](KernelContext&) {
                                    ++*calls;
                                    return Status::OK();
                                  })
                  .ok());
  std::string logged;
  LogSink previous = SetLogSink([&logged](LogLevel level, std::string_view message) {
    if (level >= LogLevel::kWarning) logged += std::string(message) + "\n";
  });
  setenv("TROUPE_GPU_INJECT_FAULT", env, 1);
  InstallGpuFaultHandling(registry);
  unsetenv("TROUPE_GPU_INJECT_FAULT");
  SetLogSink(previous);
  return logged;
}

TEST(GpuFaultInjection, BadValuesAreLoggedAndIgnored) {
  for (const char* env : {"FakeOp", "FakeOp:0", "NoSuchOp:3"}) {
    OpRegistry registry;
    int calls = 0;
    const std::string logged = InstallWith(registry, env, &calls);
    EXPECT_NE(logged.find("TROUPE_GPU_INJECT_FAULT='" + std::string(env) + "'"), std::string::npos)
        << logged;
    EXPECT_NE(logged.find("<OpName>:<N>"), std::string::npos) << logged;
    EXPECT_NE(logged.find("ignored"), std::string::npos) << logged;
  }
  OpRegistry registry;
  int calls = 0;
  EXPECT_NE(InstallWith(registry, "NoSuchOp:3", &calls).find("no GPU kernel for op 'NoSuchOp'"),
            std::string::npos);
}

TEST(GpuFaultInjection, WrappedKernelStillRuns) {
  // A CPU context: the wrapper counts and calls the real kernel but queues nothing.
  OpRegistry registry;
  int calls = 0;
  const std::string logged = InstallWith(registry, "FakeOp:2", &calls);
  EXPECT_NE(logged.find("call 2 of the GPU kernel of FakeOp"), std::string::npos) << logged;
  auto kernel = registry.LookupKernel("FakeOp", Device::Type::kGpu);
  ASSERT_TRUE(kernel.ok());
  AttrMap attrs;
  for (int i = 0; i < 3; ++i) {
    KernelContext ctx("FakeOp", {}, attrs);
    EXPECT_TRUE((**kernel)(ctx).ok());
  }
  EXPECT_EQ(calls, 3);
}

TEST(GpuFaultInjection, KernelErrorsPassThroughWithoutAFault) {
  TROUPE_SKIP_WITHOUT_GPU();
  OpRegistry registry;
  ASSERT_TRUE(registry
                  .RegisterKernel("FailingOp", Device::Type::kGpu,
                                  [](KernelContext& ctx) { return ctx.InvalidArgument("bad"); })
                  .ok());
  InstallGpuFaultHandling(registry);
  auto kernel = registry.LookupKernel("FailingOp", Device::Type::kGpu);
  ASSERT_TRUE(kernel.ok());
  AttrMap attrs;
  KernelContext ctx("FailingOp", {}, attrs, Device::Gpu(0));
  Status s = (**kernel)(ctx);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s;
  EXPECT_EQ(s.message(), "FailingOp: bad");
}

// In the death-test child: arms the injector before the registry exists, runs
// Conv2DBackpropFilter until well past the faulting call, then waits for the device. The first
// error anything reported goes to stderr; exit 0 (static destructors included) if there was one.
[[noreturn]] void FaultAndReport() {
  setenv("TROUPE_GPU_INJECT_FAULT", "Conv2DBackpropFilter:2", 1);
  unsetenv("TROUPE_GPU_SYNC");
  const TensorShape xs{2, 8, 8, 3}, dys{2, 6, 6, 4};  // a 3x3x3x4 VALID filter
  AttrMap attrs{{"strides", std::vector<int64_t>{1, 1, 1, 1}},
                {"padding", std::string("VALID")},
                {"filter_sizes", std::vector<int64_t>{3, 3, 3, 4}}};
  Status first;
  auto x = gpu::CopyTo(Random(xs, 1), Device::Gpu(0));
  auto dy = gpu::CopyTo(Random(dys, 2), Device::Gpu(0));
  if (!x.ok() || !dy.ok()) {
    std::fprintf(stderr, "setup failed\n");
    std::exit(2);
  }
  const std::vector<Tensor> inputs{*x, *dy};
  for (int i = 0; i < 6 && first.ok(); ++i) {
    first = RunOp("Conv2DBackpropFilter", inputs, attrs, Device::Gpu(0)).status();
  }
  if (first.ok()) first = gpu::Synchronize(0);
  if (first.ok()) first = gpu::CheckLastError(0, "after the injected fault");
  Status again = gpu::CheckLastError(0, "once more");
  std::fprintf(stderr, "FAULT REPORTED: %s\nTHEN: %s\n", first.ToString().c_str(),
               again.ToString().c_str());
  std::fflush(stderr);
  std::exit(first.ok() ? 1 : 0);
}

TEST(GpuFaultInjection, RealFaultNamesDeviceAndAdvice) {
  TROUPE_SKIP_WITHOUT_GPU();
  // A fresh process (re-executed, so CUDA starts clean) whose registry sees the variable.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(FaultAndReport(), testing::ExitedWithCode(0),
              "FAULT REPORTED: [^\n]*gpu:0: [^\n]*an illegal memory access was encountered[^\n]*"
              "TROUPE_GPU_SYNC=1[^\n]*restart[^\n]*\nTHEN: [^\n]*illegal memory access");
}

}  // namespace
}  // namespace troupe::gpu_testing
