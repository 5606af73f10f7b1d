// The Keras convolution family beyond Conv2D/DepthwiseConv2D (graph/keras/layers_conv.cc):
// weights under Keras' attribute paths and shapes, output shapes, and the refusals (each
// naming class, layer and option). Numerics against Keras: tests/interop/
// layers_conv_keras_test.py.
#include <gtest/gtest.h>

#include "graph/keras/layer_factory.h"
#include "graph/ops.h"

namespace troupe::keras {
namespace {

using json = nlohmann::json;

json Envelope(const std::string& cls, json config) {
  config["name"] = "c";
  config["trainable"] = true;
  return {{"module", "keras.layers"},
          {"class_name", cls},
          {"config", config},
          {"registered_name", nullptr}};
}

Value Input(std::vector<int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  std::vector<float> v(static_cast<size_t>(n));
  for (size_t i = 0; i < v.size(); ++i) v[i] = 0.1f * static_cast<float>(i % 7) - 0.3f;
  return Value(*Tensor::FromVector(v, TensorShape(dims)));
}

struct Built {
  std::vector<std::string> names;
  std::vector<TensorShape> shapes;
  TensorShape out;
};

Built Build(const json& envelope, std::vector<int64_t> in) {
  Result<std::unique_ptr<KerasLayer>> layer = MakeKerasLayer(envelope, 7);
  EXPECT_TRUE(layer.ok()) << layer.status();
  if (!layer.ok()) return {};
  Value y = (*layer)->Apply({Input(std::move(in))}, {});
  EXPECT_TRUE(y.ok()) << y.status();
  Built b;
  b.out = y.shape();
  for (auto& [name, v] : (*layer)->KerasWeights()) {
    b.names.push_back(name);
    b.shapes.push_back(v.shape());
  }
  return b;
}

void ExpectRefused(const json& envelope, std::vector<std::string> parts,
                   std::vector<int64_t> in = {}) {
  Result<std::unique_ptr<KerasLayer>> layer = MakeKerasLayer(envelope, 1);
  std::string msg;
  if (!layer.ok()) {
    msg = layer.status().ToString();
  } else {
    ASSERT_FALSE(in.empty()) << "accepted: " << envelope.dump();
    Value y = (*layer)->Apply({Input(in)}, {});
    ASSERT_FALSE(y.ok()) << "ran: " << envelope.dump();
    msg = y.status().ToString();
  }
  for (const std::string& p : parts) {
    EXPECT_NE(msg.find(p), std::string::npos) << "'" << p << "' not in: " << msg;
  }
}

TEST(KerasConvFamilyTest, WeightsAndShapes) {
  Built sep = Build(Envelope("SeparableConv2D", {{"filters", 5},
                                                 {"kernel_size", {3, 3}},
                                                 {"depth_multiplier", 2},
                                                 {"strides", {2, 2}},
                                                 {"padding", "same"}}),
                    {2, 7, 8, 3});
  EXPECT_EQ(sep.names, (std::vector<std::string>{"depthwise_kernel", "pointwise_kernel", "bias"}));
  EXPECT_EQ(sep.shapes, (std::vector<TensorShape>{{3, 3, 3, 2}, {1, 1, 6, 5}, {5}}));
  EXPECT_EQ(sep.out, (TensorShape{2, 4, 4, 5}));

  Built sep1 =
      Build(Envelope("SeparableConv1D", {{"filters", 4}, {"kernel_size", {3}}}), {2, 9, 3});
  EXPECT_EQ(sep1.shapes, (std::vector<TensorShape>{{3, 3, 1}, {1, 3, 4}, {4}}));
  EXPECT_EQ(sep1.out, (TensorShape{2, 7, 4}));

  Built causal = Build(Envelope("Conv1D", {{"filters", 4},
                                           {"kernel_size", {3}},
                                           {"padding", "causal"},
                                           {"dilation_rate", {2}},
                                           {"use_bias", false}}),
                       {2, 9, 3});
  EXPECT_EQ(causal.names, (std::vector<std::string>{"_kernel"}));
  EXPECT_EQ(causal.out, (TensorShape{2, 9, 4}));

  Built grouped = Build(
      Envelope("Conv2D", {{"filters", 6}, {"kernel_size", {3, 3}}, {"groups", 3}}), {1, 5, 5, 6});
  EXPECT_EQ(grouped.names, (std::vector<std::string>{"_kernel", "bias"}));
  EXPECT_EQ(grouped.shapes, (std::vector<TensorShape>{{3, 3, 2, 6}, {6}}));
  EXPECT_EQ(grouped.out, (TensorShape{1, 3, 3, 6}));

  Built dw1 = Build(Envelope("DepthwiseConv1D", {{"kernel_size", {3}}, {"depth_multiplier", 2}}),
                    {2, 8, 3});
  EXPECT_EQ(dw1.names, (std::vector<std::string>{"kernel", "bias"}));
  EXPECT_EQ(dw1.shapes, (std::vector<TensorShape>{{3, 3, 2}, {6}}));

  Built t2 = Build(Envelope("Conv2DTranspose", {{"filters", 3},
                                                {"kernel_size", {3, 3}},
                                                {"strides", {2, 2}},
                                                {"output_padding", {1, 0}}}),
                   {2, 4, 5, 2});
  EXPECT_EQ(t2.names, (std::vector<std::string>{"kernel", "bias"}));
  EXPECT_EQ(t2.shapes, (std::vector<TensorShape>{{3, 3, 3, 2}, {3}}));
  EXPECT_EQ(t2.out, (TensorShape{2, 10, 11, 3}));

  Built c3 = Build(Envelope("Conv3D", {{"filters", 4},
                                       {"kernel_size", {3, 3, 3}},
                                       {"strides", {2, 2, 2}},
                                       {"padding", "same"}}),
                   {1, 5, 6, 5, 2});
  EXPECT_EQ(c3.shapes, (std::vector<TensorShape>{{3, 3, 3, 2, 4}, {4}}));
  EXPECT_EQ(c3.out, (TensorShape{1, 3, 3, 3, 4}));

  Built t3 = Build(Envelope("Conv3DTranspose",
                            {{"filters", 2}, {"kernel_size", {3, 3, 3}}, {"strides", {2, 2, 2}}}),
                   {1, 3, 2, 3, 3});
  EXPECT_EQ(t3.shapes, (std::vector<TensorShape>{{3, 3, 3, 2, 3}, {2}}));
  EXPECT_EQ(t3.out, (TensorShape{1, 7, 5, 7, 2}));
}

TEST(KerasConvFamilyTest, RefusesNamingClassLayerAndOption) {
  ExpectRefused(Envelope("Conv2DTranspose",
                         {{"filters", 2}, {"kernel_size", {3, 3}}, {"dilation_rate", {2, 2}}}),
                {"Conv2DTranspose", "'c'", "dilation_rate", "2", "supported: 1"});
  ExpectRefused(Envelope("Conv2DTranspose", {{"filters", 2},
                                             {"kernel_size", {3, 3}},
                                             {"strides", {2, 2}},
                                             {"output_padding", {2, 0}}}),
                {"Conv2DTranspose", "'c'", "output_padding", "strides"});
  ExpectRefused(
      Envelope("SeparableConv2D", {{"filters", 2}, {"kernel_size", {3, 3}}, {"padding", "causal"}}),
      {"SeparableConv2D", "'c'", "padding", "causal", "valid, same"});
  ExpectRefused(
      Envelope("Conv3D",
               {{"filters", 2}, {"kernel_size", {3, 3, 3}}, {"data_format", "channels_first"}}),
      {"Conv3D", "'c'", "data_format", "channels_last"});
  ExpectRefused(
      Envelope("SeparableConv1D",
               {{"filters", 2},
                {"kernel_size", {3}},
                {"pointwise_constraint", {{"class_name", "NonNeg"}, {"config", json::object()}}}}),
      {"SeparableConv1D", "'c'", "pointwise_constraint", "null"});
  ExpectRefused(Envelope("Conv1D", {{"filters", 3}, {"kernel_size", {3}}, {"groups", 2}}),
                {"Conv1D", "'c'", "groups"});
  ExpectRefused(Envelope("Conv1D", {{"filters", 2}, {"kernel_size", {3}}, {"lora_rank", 4}}),
                {"Conv1D", "'c'", "lora_rank"});
  // Input channels not divisible by groups: refused when the layer is built.
  ExpectRefused(Envelope("Conv2D", {{"filters", 4}, {"kernel_size", {3, 3}}, {"groups", 2}}),
                {"groups 2", "input channels 3"}, {1, 5, 5, 3});
}

}  // namespace
}  // namespace troupe::keras
