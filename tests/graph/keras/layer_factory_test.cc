#include "graph/keras/layer_factory.h"

#include <gtest/gtest.h>

#include "graph/function.h"
#include "graph/ops.h"

namespace troupe::keras {
namespace {

using json = nlohmann::json;

json DType(const std::string& policy) {
  return {{"module", "keras"},
          {"class_name", "DTypePolicy"},
          {"config", {{"name", policy}}},
          {"registered_name", nullptr}};
}

json Envelope(const std::string& cls, json config) {
  if (!config.contains("dtype")) config["dtype"] = DType("float32");
  if (!config.contains("trainable")) config["trainable"] = true;
  return {{"module", "keras.layers"},
          {"class_name", cls},
          {"config", config},
          {"registered_name", nullptr}};
}

json Dense(json extra = json::object()) {
  json c = {
      {"name", "dense_1"},
      {"units", 3},
      {"activation", "relu"},
      {"use_bias", true},
      {"kernel_initializer",
       {{"module", "keras.initializers"},
        {"class_name", "GlorotUniform"},
        {"config", {{"seed", nullptr}}},
        {"registered_name", nullptr}}},
      {"bias_initializer",
       {{"module", "keras.initializers"}, {"class_name", "Zeros"}, {"config", json::object()}}},
      {"kernel_regularizer", nullptr},
      {"bias_regularizer", nullptr},
      {"kernel_constraint", nullptr},
      {"bias_constraint", nullptr},
      {"quantization_config", nullptr}};
  c.update(extra);
  return Envelope("Dense", c);
}

json Conv(json extra = json::object()) {
  json c = {{"name", "conv"},
            {"filters", 4},
            {"kernel_size", {3, 3}},
            {"strides", {1, 1}},
            {"padding", "same"},
            {"data_format", "channels_last"},
            {"dilation_rate", {1, 1}},
            {"groups", 1},
            {"activation", "linear"},
            {"use_bias", false},
            {"kernel_regularizer", nullptr},
            {"activity_regularizer", nullptr}};
  c.update(extra);
  return Envelope("Conv2D", c);
}

json BatchNorm(json extra = json::object()) {
  json c = {{"name", "bn"},           {"axis", -1},      {"momentum", 0.9},
            {"epsilon", 1e-3},        {"center", true},  {"scale", true},
            {"synchronized", false},  {"renorm", false}, {"renorm_clipping", nullptr},
            {"renorm_momentum", 0.99}};
  c.update(extra);
  return Envelope("BatchNormalization", c);
}

// The error for `envelope`, which must name every string in `parts`.
void ExpectRefused(const json& envelope, std::vector<std::string> parts) {
  Result<std::unique_ptr<KerasLayer>> layer = MakeKerasLayer(envelope, 1);
  ASSERT_FALSE(layer.ok()) << envelope.dump();
  const std::string msg = layer.status().ToString();
  for (const std::string& p : parts) {
    EXPECT_NE(msg.find(p), std::string::npos) << "'" << p << "' not in: " << msg;
  }
}

std::unique_ptr<KerasLayer> Make(const json& envelope, int64_t seed = 1) {
  Result<std::unique_ptr<KerasLayer>> layer = MakeKerasLayer(envelope, seed);
  EXPECT_TRUE(layer.ok()) << layer.status();
  return layer.ok() ? std::move(*layer) : nullptr;
}

Value Input(std::vector<int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  std::vector<float> v(static_cast<size_t>(n));
  for (size_t i = 0; i < v.size(); ++i) v[i] = 0.1f * static_cast<float>(i % 7) - 0.3f;
  return Value(*Tensor::FromVector(v, TensorShape(dims)));
}

std::vector<std::string> Names(const KerasLayer& layer) {
  std::vector<std::string> out;
  for (auto& [name, v] : layer.KerasWeights()) out.push_back(name + "=" + v.name());
  return out;
}

TEST(KerasLayerFactoryTest, RefusesUnsupportedOptionsNamingClassLayerAndOption) {
  const json non_neg = {{"class_name", "NonNeg"}, {"config", json::object()}};
  ExpectRefused(Conv({{"kernel_constraint", non_neg}}),
                {"Conv2D", "'conv'", "kernel_constraint", "null"});
  ExpectRefused(Conv({{"data_format", "channels_first"}}),
                {"Conv2D", "'conv'", "data_format", "channels_last"});
  ExpectRefused(Conv({{"activity_regularizer", {{"class_name", "L2"}, {"config", {{"l2", 0.1}}}}}}),
                {"Conv2D", "'conv'", "activity_regularizer", "null"});
  ExpectRefused(
      Dense({{"kernel_constraint", {{"class_name", "NonNeg"}, {"config", json::object()}}}}),
      {"Dense", "'dense_1'", "kernel_constraint", "null"});
  ExpectRefused(Dense({{"dtype", DType("float16")}}),
                {"Dense", "'dense_1'", "dtype", "float16", "mixed_float16", "float32"});
  ExpectRefused(Dense({{"dtype", DType("int8_from_mixed_bfloat16")}}),
                {"Dense", "'dense_1'", "dtype", "int8_from_mixed_bfloat16"});
  ExpectRefused(Dense({{"dtype", json::array({1})}}), {"Dense", "'dense_1'", "dtype", "[1]"});
  ExpectRefused(Dense({{"lora_rank", 4}}), {"Dense", "'dense_1'", "lora_rank"});
  ExpectRefused(Dense({{"some_future_option", 1}}), {"Dense", "'dense_1'", "some_future_option"});
  ExpectRefused(Dense({{"activation", "my_activation"}}),
                {"Dense", "'dense_1'", "my_activation", "gelu"});
  ExpectRefused(BatchNorm({{"renorm", true}}), {"BatchNormalization", "'bn'", "renorm", "false"});
  ExpectRefused(Envelope("LayerNormalization", {{"name", "ln"}, {"beta_constraint", non_neg}}),
                {"LayerNormalization", "'ln'", "beta_constraint"});
  ExpectRefused(Envelope("Embedding", {{"name", "emb"},
                                       {"input_dim", 5},
                                       {"output_dim", 2},
                                       {"embeddings_constraint", non_neg}}),
                {"Embedding", "'emb'", "embeddings_constraint", "null"});
  json mha = {{"name", "mha"}, {"num_heads", 2}, {"key_dim", 4}};
  json gated = mha;
  gated["use_gate"] = true;
  ExpectRefused(Envelope("MultiHeadAttention", gated),
                {"MultiHeadAttention", "'mha'", "use_gate", "false"});
  json window = mha;
  window["sliding_window"] = 16;
  ExpectRefused(Envelope("MultiHeadAttention", window),
                {"MultiHeadAttention", "'mha'", "sliding_window", "null"});
  ExpectRefused(
      Envelope("SomeFutureLayer", {{"name", "future"}}),
      {"keras.layers.SomeFutureLayer", "'future'", "supported layers", "keras.layers.Dense"});
  ExpectRefused(Dense({{"kernel_initializer", "my_initializer"}}),
                {"Dense", "'dense_1'", "kernel_initializer", "GlorotUniform"});
}

TEST(KerasLayerFactoryTest, KeepsEachLayersDTypePolicy) {
  for (const char* policy : {"mixed_float16", "mixed_bfloat16", "float32"}) {
    auto layer = MakeKerasLayer(Dense({{"dtype", DType(policy)}}), 1);
    ASSERT_TRUE(layer.ok()) << layer.status();
    EXPECT_EQ((*layer)->dtype_policy(), policy);
  }
  // Keras 3.0-3.3 wrote the policy's name as a string.
  auto named = MakeKerasLayer(Dense({{"dtype", "mixed_bfloat16"}}), 1);
  ASSERT_TRUE(named.ok()) << named.status();
  EXPECT_EQ((*named)->dtype_policy(), "mixed_bfloat16");
  json plain = Dense();
  plain["config"].erase("dtype");
  auto unset = MakeKerasLayer(plain, 1);
  ASSERT_TRUE(unset.ok()) << unset.status();
  EXPECT_EQ((*unset)->dtype_policy(), "");
}

TEST(KerasLayerFactoryTest, SupportedListIsSortedAndHasTheOpAdd) {
  std::vector<std::string> names = SupportedKerasLayers();
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  EXPECT_NE(std::find(names.begin(), names.end(), "keras.src.ops.numpy.Add"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "keras.layers.BatchNormalization"), names.end());
  json op_add = {{"module", "keras.src.ops.numpy"},
                 {"class_name", "Add"},
                 {"config", {{"name", "add"}}},
                 {"registered_name", "Add"}};
  auto add = Make(op_add);
  ASSERT_NE(add, nullptr);
  EXPECT_EQ(add->module(), nullptr);
  Value y = add->Apply({Input({2, 2}), Input({2, 2})}, {});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_FLOAT_EQ(y.tensor()->data<float>()[1], 2 * (0.1f - 0.3f));
}

TEST(KerasLayerFactoryTest, WeightsComeUnderKerasNamesInKerasOrder) {
  auto dense = Make(Dense());
  ASSERT_TRUE(dense->Apply({Input({2, 5})}, {}).ok());
  EXPECT_EQ(Names(*dense), (std::vector<std::string>{"_kernel=kernel", "bias=bias"}));
  EXPECT_EQ(dense->KerasWeights()[0].second.shape(), (TensorShape{5, 3}));

  auto conv = Make(Conv());
  ASSERT_TRUE(conv->Apply({Input({1, 5, 5, 2})}, {}).ok());
  EXPECT_EQ(Names(*conv), (std::vector<std::string>{"_kernel=kernel"}));
  EXPECT_EQ(conv->KerasWeights()[0].second.shape(), (TensorShape{3, 3, 2, 4}));

  auto depthwise = Make(Envelope("DepthwiseConv2D", {{"name", "dw"},
                                                     {"kernel_size", {3, 3}},
                                                     {"depth_multiplier", 2},
                                                     {"dilation_rate", {2, 2}},
                                                     {"padding", "same"}}));
  Value dw = depthwise->Apply({Input({1, 6, 6, 3})}, {});
  ASSERT_TRUE(dw.ok()) << dw.status();
  EXPECT_EQ(dw.shape(), (TensorShape{1, 6, 6, 6}));
  EXPECT_EQ(Names(*depthwise), (std::vector<std::string>{"kernel=kernel", "bias=bias"}));
  EXPECT_EQ(depthwise->KerasWeights()[0].second.shape(), (TensorShape{3, 3, 3, 2}));

  auto bn = Make(BatchNorm());
  ASSERT_TRUE(bn->Apply({Input({4, 3})}, {}).ok());
  EXPECT_EQ(Names(*bn),
            (std::vector<std::string>{"gamma=gamma", "beta=beta", "moving_mean=moving_mean",
                                      "moving_variance=moving_variance"}));
  auto frozen = Make(BatchNorm({{"trainable", false}, {"center", false}}));
  ASSERT_TRUE(frozen->Apply({Input({4, 3})}, {.training = true}).ok());
  EXPECT_EQ(Names(*frozen), (std::vector<std::string>{"gamma=gamma", "moving_mean=moving_mean",
                                                      "moving_variance=moving_variance"}));
  EXPECT_FALSE(frozen->KerasWeights()[0].second.trainable());
  // Frozen: inference mode even when called with training=true.
  EXPECT_FLOAT_EQ(frozen->KerasWeights()[1].second.value().data<float>()[0], 0.0f);

  auto pool = Make(Envelope("MaxPooling2D", {{"name", "pool"},
                                             {"pool_size", {2, 2}},
                                             {"padding", "valid"},
                                             {"strides", nullptr},
                                             {"data_format", "channels_last"}}));
  EXPECT_EQ(pool->module(), nullptr);
  EXPECT_TRUE(pool->KerasWeights().empty());
}

TEST(KerasLayerFactoryTest, MultiHeadAttentionWeightsInKerasOrder) {
  auto mha = Make(Envelope("MultiHeadAttention",
                           {{"name", "mha"}, {"num_heads", 2}, {"key_dim", 3}, {"value_dim", 5}}));
  ASSERT_TRUE(mha->Apply({Input({2, 4, 6}), Input({2, 7, 8})}, {.use_causal_mask = false}).ok());
  EXPECT_EQ(Names(*mha), (std::vector<std::string>{
                             "_query_dense/_kernel=query/kernel", "_query_dense/bias=query/bias",
                             "_key_dense/_kernel=key/kernel", "_key_dense/bias=key/bias",
                             "_value_dense/_kernel=value/kernel", "_value_dense/bias=value/bias",
                             "_output_dense/_kernel=attention_output/kernel",
                             "_output_dense/bias=attention_output/bias"}));
  auto w = mha->KerasWeights();
  EXPECT_EQ(w[2].second.shape(), (TensorShape{8, 2, 3}));  // key kernel: (Dk, N, key_dim)
  EXPECT_EQ(w[4].second.shape(), (TensorShape{8, 2, 5}));  // value kernel
  EXPECT_EQ(w[6].second.shape(), (TensorShape{2, 5, 6}));  // output kernel: (N, Hv, Dq)
}

TEST(KerasLayerFactoryTest, TroupeRegisteredLayersAreFoundByRegisteredName) {
  // Keras records the Python module the class was defined in; "troupe>Name" identifies it.
  json pos = {{"module", "troupe_keras"},
              {"class_name", "PositionEmbedding"},
              {"config", {{"name", "pos"}, {"sequence_length", 6}, {"trainable", true}}},
              {"registered_name", "troupe>PositionEmbedding"}};
  auto layer = Make(pos);
  ASSERT_NE(layer, nullptr);
  Value y = layer->Apply({Input({2, 4, 3})}, {});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(Names(*layer), (std::vector<std::string>{"embeddings=embeddings"}));
  EXPECT_EQ(layer->KerasWeights()[0].second.shape(), (TensorShape{6, 3}));
  pos["registered_name"] = "other>PositionEmbedding";
  ExpectRefused(pos, {"troupe_keras.PositionEmbedding", "'pos'", "not supported"});
}

TEST(KerasLayerFactoryTest, EmbeddingWrapsNegativeIdsAndRefusesOutOfRangeOnes) {
  auto emb = Make(Envelope("Embedding", {{"name", "emb"}, {"input_dim", 4}, {"output_dim", 2}}));
  Value ids(Tensor::FromVector<int32_t>({3, -1, 0, -4}));
  Value y = emb->Apply({ids}, {});
  ASSERT_TRUE(y.ok()) << y.status();
  const float* table = emb->KerasWeights()[0].second.value().data<float>();
  const float* out = y.tensor()->data<float>();
  EXPECT_EQ(out[2], table[6]);  // id -1 is row 3
  EXPECT_EQ(out[6], table[0]);  // id -4 is row 0
  EXPECT_FALSE(emb->Apply({Value(Tensor::FromVector<int32_t>({4}))}, {}).ok());
  EXPECT_FALSE(emb->Apply({Value(Tensor::FromVector<int32_t>({-5}))}, {}).ok());
}

TEST(KerasLayerFactoryTest, RegularizersBecomePenalties) {
  json l2 = {{"module", "keras.regularizers"},
             {"class_name", "L2"},
             {"config", {{"l2", 1e-4}}},
             {"registered_name", nullptr}};
  json l1l2 = {{"class_name", "L1L2"}, {"config", {{"l1", 0.5}, {"l2", 0.25}}}};
  auto dense = Make(Dense({{"kernel_regularizer", l2}, {"bias_regularizer", l1l2}}));
  ASSERT_TRUE(dense->Apply({Input({2, 5})}, {}).ok());
  std::vector<WeightPenalty> p = dense->Penalties();
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].variable.name(), "kernel");
  EXPECT_DOUBLE_EQ(p[0].l1, 0.0);
  EXPECT_DOUBLE_EQ(p[0].l2, 1e-4);
  EXPECT_EQ(p[1].variable.name(), "bias");
  EXPECT_DOUBLE_EQ(p[1].l1, 0.5);
  EXPECT_DOUBLE_EQ(p[1].l2, 0.25);
}

TEST(KerasLayerFactoryTest, UnseededInitializersFollowTheDefaultSeed) {
  auto values = [](int64_t seed) {
    auto d = Make(Dense(), seed);
    EXPECT_TRUE(d->Apply({Input({2, 5})}, {}).ok());
    Tensor k = d->KerasWeights()[0].second.value();
    return std::vector<float>(k.data<float>(), k.data<float>() + k.num_elements());
  };
  EXPECT_EQ(values(7), values(7));
  EXPECT_NE(values(7), values(8));
  // A seeded Keras initializer ignores the default seed.
  json seeded = {{"class_name", "GlorotUniform"}, {"config", {{"seed", 42}}}};
  auto a = Make(Dense({{"kernel_initializer", seeded}}), 1);
  auto b = Make(Dense({{"kernel_initializer", seeded}}), 2);
  ASSERT_TRUE(a->Apply({Input({2, 5})}, {}).ok());
  ASSERT_TRUE(b->Apply({Input({2, 5})}, {}).ok());
  Tensor ka = a->KerasWeights()[0].second.value();
  Tensor kb = b->KerasWeights()[0].second.value();
  EXPECT_EQ(std::vector<float>(ka.data<float>(), ka.data<float>() + 15),
            std::vector<float>(kb.data<float>(), kb.data<float>() + 15));
}

TEST(KerasLayerFactoryTest, BatchNormTrainingMovesStatistics) {
  auto depthwise = Make(Envelope("DepthwiseConv2D", {{"name", "dw"},
                                                     {"kernel_size", {3, 3}},
                                                     {"depth_multiplier", 2},
                                                     {"dilation_rate", {2, 2}},
                                                     {"padding", "same"}}));
  Value dw = depthwise->Apply({Input({1, 6, 6, 3})}, {});
  ASSERT_TRUE(dw.ok()) << dw.status();
  EXPECT_EQ(dw.shape(), (TensorShape{1, 6, 6, 6}));
  EXPECT_EQ(Names(*depthwise), (std::vector<std::string>{"kernel=kernel", "bias=bias"}));
  EXPECT_EQ(depthwise->KerasWeights()[0].second.shape(), (TensorShape{3, 3, 3, 2}));

  auto bn = Make(BatchNorm());
  Value x = Input({4, 3});
  ASSERT_TRUE(bn->Apply({x}, {}).ok());
  const Variable mean = bn->KerasWeights()[2].second;
  EXPECT_FLOAT_EQ(mean.value().data<float>()[0], 0.0f);
  ASSERT_TRUE(bn->Apply({x}, {.training = true}).ok());
  // Column 0 holds -0.3, 0.0, 0.3, -0.1 (i % 7 pattern): mean -0.025, momentum 0.9.
  EXPECT_NEAR(mean.value().data<float>()[0], 0.1f * -0.025f, 1e-7);
}

}  // namespace
}  // namespace troupe::keras

namespace troupe::keras {
namespace {

// Each layer traced with an unknown batch dim (the training loop's signature) computes what
// it computes eagerly.
TEST(KerasLayerFactoryTest, TracesWithAnUnknownBatch) {
  struct Case {
    std::string what;
    json envelope;
    std::vector<Tensor> inputs;  // batch 2
    CallOptions options;
  };
  auto floats = [](std::vector<int64_t> dims) { return *Input(std::move(dims)).tensor(); };
  std::vector<Case> cases = {
      {"mha causal",
       Envelope("MultiHeadAttention", {{"name", "mha"}, {"num_heads", 2}, {"key_dim", 3}}),
       {floats({2, 4, 5}), floats({2, 4, 5})},
       {.use_causal_mask = true}},
      {"mha dropout path",
       Envelope("MultiHeadAttention",
                {{"name", "mha"}, {"num_heads", 2}, {"key_dim", 3}, {"dropout", 0.5}}),
       {floats({2, 4, 5}), floats({2, 6, 3})},
       {}},
      {"embedding",
       Envelope("Embedding", {{"name", "emb"}, {"input_dim", 7}, {"output_dim", 3}}),
       {*Tensor::FromVector<int32_t>({1, -2, 6, 1, 0, -7}, TensorShape{2, 3})},
       {}},
      {"depthwise dilated",
       Envelope("DepthwiseConv2D", {{"name", "dw"},
                                    {"kernel_size", {3, 3}},
                                    {"dilation_rate", {2, 2}},
                                    {"padding", "same"}}),
       {floats({2, 7, 7, 2})},
       {}},
      {"dense rank 3", Dense(), {floats({2, 4, 5})}, {}},
      {"batch norm training", BatchNorm(), {floats({2, 4, 3})}, {.training = true}},
  };
  for (const Case& c : cases) {
    auto eager_layer = Make(c.envelope);
    auto traced_layer = Make(c.envelope);
    ASSERT_NE(traced_layer, nullptr) << c.what;
    std::vector<Value> xs(c.inputs.begin(), c.inputs.end());
    // Same weights on both (the seeds are equal); the eager call also builds.
    Value want = eager_layer->Apply(xs, c.options);
    ASSERT_TRUE(want.ok()) << c.what << ": " << want.status();
    FunctionOptions fo;
    std::vector<TensorSpec> signature;
    for (const Tensor& t : c.inputs) {
      TensorShape s = t.shape();
      s.set_dim(0, -1);
      signature.push_back(TensorSpec{s, t.dtype(), ""});
    }
    fo.input_signature = signature;
    Function f(
        "layer",
        [&](const Args& a) -> Outputs {
          std::vector<Value> in;
          for (size_t i = 0; i < c.inputs.size(); ++i) in.push_back(a[i].value());
          return std::vector<Value>{traced_layer->Apply(in, c.options)};
        },
        fo);
    std::vector<Arg> args(c.inputs.begin(), c.inputs.end());
    Result<std::vector<Tensor>> got = f.Run(args);
    ASSERT_TRUE(got.ok()) << c.what << ": " << got.status();
    Tensor w = *want.tensor();
    ASSERT_EQ((*got)[0].shape(), w.shape()) << c.what;
    for (int64_t i = 0; i < w.num_elements(); ++i) {
      EXPECT_NEAR((*got)[0].data<float>()[i], w.data<float>()[i], 1e-6) << c.what << " @" << i;
    }
  }
}

}  // namespace
}  // namespace troupe::keras
