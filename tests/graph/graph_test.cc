#include "graph/graph.h"

#include <gtest/gtest.h>

#include "graph/func_graph.h"
#include "graph/ops.h"

namespace troupe {
namespace {

TEST(GraphTest, UniqueNamesAndListing) {
  Graph g("g");
  int a = g.AddPlaceholder({TensorShape{}, DType::kFloat32, ""}, "a");
  auto add = g.AddKernelNode("AddV2", {{a, 0}, {a, 0}}, {}, "add");
  ASSERT_TRUE(add.ok()) << add.status();
  auto id = g.AddKernelNode("Identity", {{*add, 0}}, {}, "Identity");
  ASSERT_TRUE(id.ok());
  EXPECT_EQ(g.DebugString(), "[] -> a\n[a, a] -> add\n[add] -> Identity\n");
  EXPECT_EQ(g.UniqueName("add"), "add_1");
  EXPECT_EQ(g.OutputName({*add, 0}), "add:0");
}

TEST(GraphTest, ShapeInferenceWithUnknownDims) {
  Graph g("g");
  int x = g.AddPlaceholder({TensorShape{-1, 3}, DType::kFloat32, ""}, "x");
  int w = g.AddPlaceholder({TensorShape{3, 4}, DType::kFloat32, ""}, "w");
  auto mm = g.AddKernelNode("MatMul", {{x, 0}, {w, 0}}, {});
  ASSERT_TRUE(mm.ok()) << mm.status();
  EXPECT_EQ(g.spec({*mm, 0}).shape, (TensorShape{-1, 4}));
}

TEST(GraphTest, ShapeErrorNamesNodeAndSpecs) {
  Graph g("g");
  int x = g.AddPlaceholder({TensorShape{2, 3}, DType::kFloat32, ""}, "x");
  int w = g.AddPlaceholder({TensorShape{5, 4}, DType::kFloat32, ""}, "w");
  auto mm = g.AddKernelNode("MatMul", {{x, 0}, {w, 0}}, {}, "matmul");
  ASSERT_FALSE(mm.ok());
  EXPECT_NE(mm.status().message().find("node 'matmul' (MatMul)"), std::string::npos) << mm.status();
  EXPECT_NE(mm.status().message().find("[2,3]"), std::string::npos) << mm.status();
  EXPECT_NE(mm.status().message().find("[5,4]"), std::string::npos) << mm.status();
}

TEST(GraphTest, UnknownOpIsAnError) {
  Graph g("g");
  auto r = g.AddKernelNode("NoSuchOp", {}, {});
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
}

TEST(FuncGraphTest, LeakedSymbolicTensorIsRejected) {
  auto leaky = std::make_shared<FuncGraph>("leaky_function");
  Value leaked;
  {
    BuildScope scope(leaky);
    Value a = leaky->AddInput({TensorShape{}, DType::kFloat32, ""}, "a");
    leaked = a + 1.0;
  }
  leaky->FinishBuilding();
  // Another graph may not use it...
  auto other = std::make_shared<FuncGraph>("other");
  {
    BuildScope scope(other);
    Value b = other->AddInput({TensorShape{}, DType::kFloat32, ""}, "b");
    Value c = b + leaked;
    ASSERT_FALSE(c.ok());
    EXPECT_NE(c.status().message().find("'add:0'"), std::string::npos) << c.status();
    EXPECT_NE(c.status().message().find("leaky_function"), std::string::npos) << c.status();
  }
  // ...and it has no value eagerly.
  EXPECT_FALSE(leaked.tensor().ok());
  EXPECT_FALSE((leaked + 1.0).ok());
}

}  // namespace
}  // namespace troupe
