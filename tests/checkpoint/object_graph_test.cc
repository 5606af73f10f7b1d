#include "checkpoint/object_graph.h"

#include <gtest/gtest.h>

#include "checkpoint/bundle_reader.h"
#include "checkpoint/keras_layout.h"
#include "checkpoint/object_checkpoint.h"
#include "checkpoint/proto/trackable_object_graph.pb.h"
#include "tests/checkpoint/test_util.h"

namespace troupe::ckpt {
namespace {

using testing::Iota;
using testing::ScratchDir;

// A toy optimizer keeping slot "m" per variable, like TF1 optimizers (SlotVariableReference).
class SlotOptimizer : public TrackableObject {
 public:
  explicit SlotOptimizer(std::vector<VariableTrackable*> vars) {
    for (auto* v : vars) {
      slots_[v] = std::make_unique<VariableTrackable>(
          v->full_name() + "/m", *Tensor::Zeros(v->value().dtype(), v->value().shape()));
    }
    iterations_ = std::make_unique<VariableTrackable>("iter", Tensor::Scalar<int64_t>(5));
    Track("iter", iterations_.get());
  }
  std::vector<std::string> SlotNames() const override { return {"m"}; }
  Trackable* GetSlot(const Trackable* var, std::string_view name) const override {
    auto it = slots_.find(var);
    return name == "m" && it != slots_.end() ? it->second.get() : nullptr;
  }
  Trackable* CreateSlotForRestore(Trackable* var, std::string_view name) override {
    auto* v = dynamic_cast<VariableTrackable*>(var);
    if (name != "m" || v == nullptr) return nullptr;
    auto& slot = slots_[var];
    slot = std::make_unique<VariableTrackable>(v->full_name() + "/m", Tensor());
    return slot.get();
  }
  VariableTrackable* slot(const Trackable* var) {
    auto it = slots_.find(var);
    return it == slots_.end() ? nullptr : it->second.get();
  }

 private:
  std::map<const Trackable*, std::unique_ptr<VariableTrackable>> slots_;
  std::unique_ptr<VariableTrackable> iterations_;
};

TEST(ObjectGraphTest, EscapesNamesLikeTensorFlow) {
  EXPECT_EQ(EscapeLocalName("a.b/c"), "a..b.Sc");
  EXPECT_EQ(EscapeLocalName("./"), "...S");
  EXPECT_EQ(AttributeKey("model/dense", "VARIABLE_VALUE"),
            "model/dense/.ATTRIBUTES/VARIABLE_VALUE");
  EXPECT_EQ(AttributeKey("", "x"), "/.ATTRIBUTES/x");
  EXPECT_EQ(SlotVariablePath("model/k", "optimizer", "m"), "model/k/.OPTIMIZER_SLOT/optimizer/m");
}

TEST(ObjectGraphTest, SerializesDagBreadthFirstWithSlots) {
  VariableTrackable kernel("dense/kernel", Iota<float>({2, 2}));
  VariableTrackable bias("dense/bias", Iota<float>({2}));
  TrackableObject layer;
  layer.Track("kernel", &kernel);
  layer.Track("bias", &bias);
  TrackableObject model;
  model.Track("dense", &layer);
  TrackableList vars;  // a second path to the same variables
  vars.Append(&kernel);
  vars.Append(&bias);
  model.Track("vars", &vars);
  SlotOptimizer opt({&kernel, &bias});
  Checkpoint root;
  root.Track("optimizer", &opt);
  root.Track("model", &model);

  auto snap = SerializeObjectGraph(root);
  ASSERT_TRUE(snap.ok()) << snap.status();
  tfproto::TrackableObjectGraph g;
  ASSERT_TRUE(g.ParseFromString(snap->serialized_graph));
  // root, model, optimizer | dense, vars, iter | kernel, bias | slots m(kernel), m(bias)
  ASSERT_EQ(g.nodes_size(), 10);
  EXPECT_EQ(g.nodes(0).children(0).local_name(), "model");  // sorted like TF's kwargs
  EXPECT_EQ(g.nodes(0).children(1).local_name(), "optimizer");
  // vars/0 refers to the same node as dense/kernel.
  EXPECT_EQ(g.nodes(4).children(0).node_id(), g.nodes(3).children(0).node_id());
  ASSERT_EQ(g.nodes(2).slot_variables_size(), 2);
  EXPECT_EQ(g.nodes(2).slot_variables(0).slot_variable_node_id(), 8);
  std::vector<std::string> keys;
  for (const auto& [k, t] : snap->tensors) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{
                      "optimizer/iter/.ATTRIBUTES/VARIABLE_VALUE",
                      "model/dense/kernel/.ATTRIBUTES/VARIABLE_VALUE",
                      "model/dense/bias/.ATTRIBUTES/VARIABLE_VALUE",
                      "model/dense/kernel/.OPTIMIZER_SLOT/optimizer/m/.ATTRIBUTES/VARIABLE_VALUE",
                      "model/dense/bias/.OPTIMIZER_SLOT/optimizer/m/.ATTRIBUTES/VARIABLE_VALUE"}));
  for (const auto& n : g.nodes()) EXPECT_TRUE(n.has_checkpoint_values().value());
  EXPECT_EQ(g.nodes(6).attributes(0).full_name(), "dense/kernel");
}

TEST(ObjectGraphTest, RestoresByStructureIncludingLazySlots) {
  ScratchDir dir;
  VariableTrackable kernel("k", Iota<float>({2, 2}, 1.0f));
  TrackableObject model;
  model.Track("kernel", &kernel);
  SlotOptimizer opt({&kernel});
  opt.slot(&kernel)->set_value(Iota<float>({2, 2}, 100.0f));
  Checkpoint root;
  root.Track("model", &model);
  root.Track("optimizer", &opt);
  auto path = root.Save(dir / "ckpt");
  ASSERT_TRUE(path.ok()) << path.status();
  EXPECT_EQ(*path, dir / "ckpt-1");

  VariableTrackable kernel2("k", *Tensor::Zeros(DType::kFloat32, TensorShape{2, 2}));
  TrackableObject model2;
  model2.Track("kernel", &kernel2);
  SlotOptimizer opt2({});  // no slots yet: restore creates them
  Checkpoint root2;
  root2.Track("model", &model2);
  root2.Track("optimizer", &opt2);
  auto st = root2.Restore(dir.path());
  ASSERT_TRUE(st.ok()) << st.status();
  EXPECT_TRUE(st->AssertConsumed().ok()) << st->AssertConsumed();
  EXPECT_TRUE(kernel2.value().BitEqual(Iota<float>({2, 2}, 1.0f)));
  ASSERT_NE(opt2.slot(&kernel2), nullptr);
  EXPECT_TRUE(opt2.slot(&kernel2)->value().BitEqual(Iota<float>({2, 2}, 100.0f)));
  EXPECT_EQ(root2.save_count(), 1);
}

TEST(ObjectGraphTest, RestoresVariablesInPlace) {
  ScratchDir dir;
  VariableTrackable v("v", Iota<float>({64}, 3.0f));
  Checkpoint saved;
  saved.Track("v", &v);
  ASSERT_TRUE(saved.Write(dir / "c").ok());
  Tensor buffer = *Tensor::Zeros(DType::kFloat32, TensorShape{64});
  VariableTrackable live_v("v", buffer);
  Checkpoint live;
  live.Track("v", &live_v);
  ASSERT_TRUE(live.Restore(dir / "c").ok());
  // Like tf.Variable.assign: the variable's own buffer now holds the saved value.
  EXPECT_TRUE(live_v.value().SharesBufferWith(buffer));
  EXPECT_TRUE(buffer.BitEqual(Iota<float>({64}, 3.0f)));
  // An atomic restore reads into fresh memory and then adopts it.
  VariableTrackable fresh_v("v", *Tensor::Zeros(DType::kFloat32, TensorShape{64}));
  Checkpoint fresh;
  fresh.Track("v", &fresh_v);
  ASSERT_TRUE(fresh.Restore(dir / "c", {.atomic = true}).ok());
  EXPECT_TRUE(fresh_v.value().BitEqual(Iota<float>({64}, 3.0f)));
}

TEST(ObjectGraphTest, ReportsUnmatchedObjectsBothWays) {
  ScratchDir dir;
  VariableTrackable a("a", Iota<float>({2}));
  VariableTrackable b("b", Iota<float>({2}));
  Checkpoint saved;
  saved.Track("a", &a);
  saved.Track("b", &b);
  ASSERT_TRUE(saved.Write(dir / "c").ok());

  // Live objects: "a" matches, "b" is absent, "c" is new.
  VariableTrackable a2("a", *Tensor::Zeros(DType::kFloat32, TensorShape{2}));
  VariableTrackable c2("c", *Tensor::Zeros(DType::kFloat32, TensorShape{2}));
  Checkpoint live;
  live.Track("a", &a2);
  live.Track("c", &c2);
  auto st = live.Restore(dir / "c");
  ASSERT_TRUE(st.ok()) << st.status();
  EXPECT_EQ(st->restored_tensors(), 1);
  EXPECT_EQ(st->AssertExistingObjectsMatched().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(st->AssertExistingObjectsMatched().message().find("c"), std::string::npos);
  EXPECT_EQ(st->AssertConsumed().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(st->unused_checkpoint_paths(), std::vector<std::string>{"b"});
  EXPECT_TRUE(st->AssertNontrivialMatch().ok());
  EXPECT_TRUE(a2.value().BitEqual(Iota<float>({2})));
}

TEST(ObjectGraphTest, ShapeMismatchFailsWithoutTouchingAnything) {
  ScratchDir dir;
  VariableTrackable a("a", Iota<float>({2}));
  VariableTrackable b("b", Iota<float>({3}));
  Checkpoint saved;
  saved.Track("a", &a);
  saved.Track("b", &b);
  ASSERT_TRUE(saved.Write(dir / "c").ok());
  VariableTrackable a2("a", *Tensor::Zeros(DType::kFloat32, TensorShape{2}));
  VariableTrackable b2("b", *Tensor::Zeros(DType::kFloat32, TensorShape{4}));
  Checkpoint live;
  live.Track("a", &a2);
  live.Track("b", &b2);
  auto st = live.Restore(dir / "c");
  EXPECT_EQ(st.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.status().message().find("b/.ATTRIBUTES/VARIABLE_VALUE"), std::string::npos);
  EXPECT_TRUE(a2.value().BitEqual(*Tensor::Zeros(DType::kFloat32, TensorShape{2})));
}

TEST(ObjectGraphTest, KerasLayoutUsesKerasNames) {
  VariableTrackable k("k", Iota<float>({4, 3})), b("b", Iota<float>({3}));
  VariableTrackable it("it", Tensor::Scalar<int64_t>(3)), lr("lr", Tensor::Scalar<float>(0.1f));
  VariableTrackable m("m", Iota<float>({4, 3})), v("v", Iota<float>({4, 3}));
  VariableTrackable mb("mb", Iota<float>({3})), vb("vb", Iota<float>({3}));
  VariableTrackable state("s", Iota<int64_t>({3}));
  KerasModelLayout model({{}, {{{"_kernel", &k}, {"bias", &b}}}});
  KerasOptimizerLayout opt(&it, &lr, {&k, &b},
                           {{"_momentums", {&m, &mb}}, {"_velocities", {&v, &vb}}});
  GeneratorLayout gen(&state);
  Checkpoint root;
  root.Track("model", &model);
  root.Track("optimizer", &opt);
  root.Track("gen", &gen);
  root.save_counter();
  auto snap = SerializeObjectGraph(root);
  ASSERT_TRUE(snap.ok());
  std::set<std::string> keys;
  for (const auto& [key, t] : snap->tensors) keys.insert(key);
  // The keys tf.train.Checkpoint gives a Keras 3 Sequential + Adam + Generator: the model's
  // variables are first reached through optimizer/_trainable_variables.
  std::set<std::string> want = {"gen/_state_var/.ATTRIBUTES/VARIABLE_VALUE",
                                "optimizer/_iterations/.ATTRIBUTES/VARIABLE_VALUE",
                                "optimizer/_learning_rate/.ATTRIBUTES/VARIABLE_VALUE",
                                "optimizer/_trainable_variables/0/.ATTRIBUTES/VARIABLE_VALUE",
                                "optimizer/_trainable_variables/1/.ATTRIBUTES/VARIABLE_VALUE",
                                "optimizer/_variables/2/.ATTRIBUTES/VARIABLE_VALUE",
                                "optimizer/_variables/3/.ATTRIBUTES/VARIABLE_VALUE",
                                "optimizer/_variables/4/.ATTRIBUTES/VARIABLE_VALUE",
                                "optimizer/_variables/5/.ATTRIBUTES/VARIABLE_VALUE",
                                "save_counter/.ATTRIBUTES/VARIABLE_VALUE"};
  EXPECT_EQ(keys, want);
}

}  // namespace
}  // namespace troupe::ckpt
