#include "graph/kernel_check.h"

#include <gtest/gtest.h>

#include "graph/func_graph.h"
#include "graph/value.h"
#include "kernels/kernel_util.h"

namespace troupe {
namespace {

// Ops with a CPU kernel and no GPU kernel in any build: identity on a float tensor.
void RegisterCpuOnlyOps() {
  static const bool registered = [] {
    for (const char* name : {"KernelCheckTestA", "KernelCheckTestB", "KernelCheckTestC"}) {
      kernels::Register(
          OpRegistry::Global(),
          {.name = name,
           .num_inputs = 1,
           .num_outputs = 1,
           .infer_shapes = [](kernels::Specs in, const AttrMap&) -> Result<kernels::SpecList> {
             return kernels::SpecList{in[0]};
           }},
          [](KernelContext& ctx) -> Status {
            ctx.SetOutput(0, ctx.input(0));
            return Status::OK();
          });
    }
    return true;
  }();
  (void)registered;
}

// The nodes a run keeps: everything but KernelCheckTestC (pruned) and the kernels that are not
// this test's (Identity, ...), whose GPU kernels exist only in CUDA builds.
std::vector<char> KeepTestOpsExceptC(const FuncGraph& g) {
  std::vector<char> keep(static_cast<size_t>(g.num_nodes()), 0);
  for (int i = 0; i < g.num_nodes(); ++i) {
    const Node& n = g.node(i);
    keep[static_cast<size_t>(i)] =
        n.kind != NodeKind::kKernel || n.op == "KernelCheckTestA" || n.op == "KernelCheckTestB";
  }
  return keep;
}

TEST(KernelCheckTest, ListsEveryOpWithoutAKernelOnTheDeviceOnce) {
  RegisterCpuOnlyOps();
  auto g = std::make_shared<FuncGraph>("step");
  {
    BuildScope scope(g);
    Value x = g->AddInput({TensorShape{3}, DType::kFloat32, ""}, "x");
    Value a = Apply1("KernelCheckTestA", {x}, {}, "first_a");
    Value a2 = Apply1("KernelCheckTestA", {a}, {}, "second_a");
    Value b = Apply1("KernelCheckTestB", {a2}, {}, "b");
    Value c = Apply1("KernelCheckTestC", {x}, {}, "c");
    (void)c;
    g->outputs.push_back(b.node_out());
  }
  g->FinishBuilding();
  const std::vector<char> keep = KeepTestOpsExceptC(*g);
  EXPECT_TRUE(CheckKernelsExist(*g, keep, Device::Cpu()).ok());
  Status s = CheckKernelsExist(*g, keep, Device::Gpu(0));
  ASSERT_EQ(s.code(), StatusCode::kNotFound) << s;
  EXPECT_EQ(s.message(),
            "graph 'step' on gpu:0: no GPU kernel for 2 ops: 'KernelCheckTestA' (node "
            "'first_a'), 'KernelCheckTestB' (node 'b'); kernels/OPS.md lists the ops each "
            "device runs")
      << s;
}

}  // namespace
}  // namespace troupe
