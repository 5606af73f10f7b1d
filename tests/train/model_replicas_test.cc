#include "train/model_replicas.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <utility>

#include "tests/train/test_models.h"

namespace troupe::train {
namespace {

Tensor Images(int64_t batch) {
  Tensor t = *Tensor::Allocate(DType::kFloat32, TensorShape{batch, 28, 28, 1});
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.num_elements(); ++i) p[i] = static_cast<float>((i * 37) % 255) / 255;
  return t;
}

Tensor Labels(int64_t batch) {
  Tensor t = *Tensor::Allocate(DType::kInt32, TensorShape{batch});
  for (int64_t i = 0; i < batch; ++i) t.data<int32_t>()[i] = static_cast<int32_t>(i % 10);
  return t;
}

// Gradients are handed over as the backward pass makes them: last layer first, first layer
// last (a report after the step would come in variable order), each exactly once and in the
// very tensor the step returns, so a bucketer's in-place result reaches the optimizer.
TEST(ModelReplicas, ReportsGradientsAsBackwardMakesThem) {
  TrainConfig config;
  auto replicas = ModelReplicas::Create(config, {Device::Cpu()}, TensorShape{28, 28, 1});
  ASSERT_TRUE(replicas.ok()) << replicas.status();
  const int n = static_cast<int>((*replicas)->trainable().size());
  ASSERT_EQ(n, 10);  // LeNet-5: 5 layers x (kernel, bias)
  for (int run = 0; run < 2; ++run) {
    std::vector<int> order;
    std::vector<const void*> reported(static_cast<size_t>(n), nullptr);
    auto out = (*replicas)->Step(0, input::Element{Images(8), Labels(8)},
                                 ModelReplicas::StepSeed(1, 0), false, [&](int i, const Tensor& g) {
                                   order.push_back(i);
                                   reported[static_cast<size_t>(i)] = g.raw_data();
                                 });
    ASSERT_TRUE(out.ok()) << out.status();
    ASSERT_EQ(static_cast<int>(order.size()), n);
    std::vector<int> sorted = order;
    std::sort(sorted.begin(), sorted.end());
    for (int i = 0; i < n; ++i) EXPECT_EQ(sorted[static_cast<size_t>(i)], i);
    EXPECT_GE(order.front(), n - 2) << "the output layer's gradients come first";
    EXPECT_LE(order.back(), 1) << "the first conv layer's gradients come last";
    for (int i = 0; i < n; ++i) {
      EXPECT_EQ(reported[static_cast<size_t>(i)], out->grads[static_cast<size_t>(i)].raw_data());
    }
  }
}

// The same gradients, bit for bit, whether or not anyone listens.
TEST(ModelReplicas, ListeningChangesNoBits) {
  TrainConfig config;
  auto replicas = ModelReplicas::Create(config, {Device::Cpu()}, TensorShape{28, 28, 1});
  ASSERT_TRUE(replicas.ok()) << replicas.status();
  auto quiet =
      (*replicas)->Step(0, input::Element{Images(16), Labels(16)}, ModelReplicas::StepSeed(1, 0));
  ASSERT_TRUE(quiet.ok()) << quiet.status();
  std::vector<Tensor> want;
  for (const Tensor& g : quiet->grads) want.push_back(g.DeepCopy());
  auto heard = (*replicas)->Step(0, input::Element{Images(16), Labels(16)},
                                 ModelReplicas::StepSeed(1, 0), false, [](int, const Tensor&) {});
  ASSERT_TRUE(heard.ok()) << heard.status();
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_TRUE(want[i].BitEqual(heard->grads[i])) << "gradient " << i;
  }
  EXPECT_EQ(quiet->loss_sum, heard->loss_sum);
}

// Dropout in a replica's step draws from the step seed: replicas with different keys drop
// different units of the same batch, the same key the same ones.
TEST(ModelReplicas, DropoutMasksFollowEachReplicasSeed) {
  testing::RegisterTestModels();
  TrainConfig config;
  config.model = "lenet_dropout_test";
  auto replicas =
      ModelReplicas::Create(config, {Device::Cpu(), Device::Cpu()}, TensorShape{28, 28, 1});
  ASSERT_TRUE(replicas.ok()) << replicas.status();
  auto loss = [&](int r, int64_t key, int64_t step) {
    auto out = (*replicas)->Step(r, input::Element{Images(16), Labels(16)},
                                 ModelReplicas::StepSeed(key, step));
    EXPECT_TRUE(out.ok()) << out.status();
    return out.ok() ? out->loss_sum : -1.0;
  };
  const double a = loss(0, 111, 5);
  EXPECT_NE(a, loss(1, 222, 5)) << "two replicas' keys gave the same dropout mask";
  EXPECT_EQ(a, loss(1, 111, 5)) << "the same key and step must give the same mask";
  EXPECT_NE(a, loss(0, 111, 6)) << "the next step must draw a new mask";
  auto eval0 = (*replicas)->Evaluate(0, input::Element{Images(16), Labels(16)});
  auto eval1 = (*replicas)->Evaluate(1, input::Element{Images(16), Labels(16)});
  ASSERT_TRUE(eval0.ok() && eval1.ok());
  EXPECT_EQ(eval0->loss_sum, eval1->loss_sum);  // no dropout when not training
}

// The model's Loss is what the loop reports and differentiates: a loss twice LeNet's gives loss
// sums and gradients exactly twice "lenet5"'s (same weights), in training and evaluation;
// accuracy still comes from the outputs.
TEST(ModelReplicas, TrainsAndEvaluatesTheModelsLoss) {
  testing::RegisterTestModels();
  auto run = [](const std::string& model) {
    TrainConfig config;
    config.model = model;
    auto replicas = ModelReplicas::Create(config, {Device::Cpu()}, TensorShape{28, 28, 1});
    EXPECT_TRUE(replicas.ok()) << replicas.status();
    auto step =
        (*replicas)->Step(0, input::Element{Images(16), Labels(16)}, ModelReplicas::StepSeed(1, 0));
    EXPECT_TRUE(step.ok()) << step.status();
    auto eval = (*replicas)->Evaluate(0, input::Element{Images(16), Labels(16)});
    EXPECT_TRUE(eval.ok()) << eval.status();
    return std::make_pair(std::move(*step), *eval);
  };
  auto [lenet_step, lenet_eval] = run("lenet5");
  auto [doubled_step, doubled_eval] = run("lenet_double_loss_test");
  EXPECT_GT(lenet_step.loss_sum, 0);
  EXPECT_EQ(doubled_step.loss_sum, 2 * lenet_step.loss_sum);
  EXPECT_EQ(doubled_step.correct, lenet_step.correct);
  ASSERT_EQ(doubled_step.grads.size(), lenet_step.grads.size());
  for (size_t i = 0; i < lenet_step.grads.size(); ++i) {
    const Tensor& a = lenet_step.grads[i];
    const Tensor& b = doubled_step.grads[i];
    ASSERT_EQ(a.num_elements(), b.num_elements());
    for (int64_t j = 0; j < a.num_elements(); ++j) {
      ASSERT_EQ(b.data<float>()[j], 2 * a.data<float>()[j]) << "gradient " << i << "[" << j << "]";
    }
  }
  EXPECT_EQ(doubled_eval.loss_sum, 2 * lenet_eval.loss_sum);
  EXPECT_EQ(doubled_eval.correct, lenet_eval.correct);
  EXPECT_EQ(doubled_eval.top5_correct, lenet_eval.top5_correct);
}

// The eval graph's top-5 count is tf.math.in_top_k(labels, model outputs, 5) summed: checked
// against the rule computed here from the model's own outputs (fewer than 5 classes score
// strictly higher than the label's); label smoothing changes the loss, not the counts.
TEST(ModelReplicas, EvaluatesTop5AsInTopK) {
  TrainConfig config;
  auto replicas = ModelReplicas::Create(config, {Device::Cpu()}, TensorShape{28, 28, 1});
  ASSERT_TRUE(replicas.ok()) << replicas.status();
  ASSERT_TRUE((*replicas)->has_top5());
  const Tensor images = Images(32), labels = Labels(32);
  auto eval = (*replicas)->Evaluate(0, input::Element{images, labels});
  ASSERT_TRUE(eval.ok()) << eval.status();
  Value out = (*replicas)->model().Call(Value(images), /*training=*/false);
  ASSERT_TRUE(out.ok()) << out.status();
  const float* logits = out.tensor()->data<float>();
  double want = 0, argmax_hits = 0;
  for (int64_t i = 0; i < 32; ++i) {
    const float* row = logits + i * 10;
    const int y = labels.data<int32_t>()[i];
    int above = 0;
    for (int c = 0; c < 10; ++c) above += row[c] > row[y] ? 1 : 0;
    want += above < 5 ? 1 : 0;
    argmax_hits += std::max_element(row, row + 10) - row == y ? 1 : 0;
  }
  EXPECT_EQ(eval->top5_correct, want);
  EXPECT_EQ(eval->correct, argmax_hits);
  EXPECT_GE(eval->top5_correct, eval->correct);

  config.label_smoothing = 0.2;
  auto smoothed = ModelReplicas::Create(config, {Device::Cpu()}, TensorShape{28, 28, 1});
  ASSERT_TRUE(smoothed.ok()) << smoothed.status();
  auto s = (*smoothed)->Evaluate(0, input::Element{images, labels});
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_NE(s->loss_sum, eval->loss_sum);
  EXPECT_EQ(s->top5_correct, eval->top5_correct);
  EXPECT_EQ(s->correct, eval->correct);
}

}  // namespace
}  // namespace troupe::train
