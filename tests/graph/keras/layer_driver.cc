// Driver for tests/interop/layers_keras_test.py: builds one Keras layer with MakeKerasLayer
// and runs it eagerly on .npy data the test wrote, so its outputs can be compared with Keras.
//
//   layer_driver DIR
//     reads  DIR/layer.json   the layer envelope
//            DIR/call.json    {"num_inputs": n, "training": b, "use_causal_mask": b, "seed": s,
//                              "precision": "float32" | "mixed_bfloat16" | "mixed_float16"}
//            DIR/in_<i>.npy   inputs;  DIR/w_<k>.npy  the k-th weight in KerasWeights() order
//            DIR/cot.npy      the output cotangent
//                            ["function": "gelu_tanh"]: an nn function no config names]
//                            ["mask": [[1, 0, ...], ...]]: a [batch, time] mask of input 0
//     writes DIR/out.npy, DIR/grad_in_<i>.npy (float inputs), DIR/grad_w_<k>.npy (trainable
//            weights), DIR/after_w_<k>.npy (every weight after the call) and DIR/weights.txt
//            ("<keras name> <variable name> <trainable>" per weight).
// The layer is built by a first inference-mode call (no state changes), then the weights are
// set and the measured call runs under a GradientTape: gradients of sum(out * cot).
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "graph/keras/layer_factory.h"
#include "graph/keras/nested_model.h"
#include "graph/nn/activations.h"
#include "graph/ops.h"
#include "graph/precision.h"
#include "graph/tape.h"
#include "tests/kernels/npy.h"

namespace troupe {
namespace {

using testing_util::ReadNpy;
using testing_util::WriteNpy;

Result<nlohmann::json> ReadJson(const std::string& path) {
  std::ifstream in(path);
  if (!in) return NotFoundError("cannot open " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  nlohmann::json j = nlohmann::json::parse(ss.str(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return InvalidArgumentError(path + " is not valid JSON");
  return j;
}

// nn functions that no Keras config string reaches (keras.activations.gelu(approximate=True)).
class FunctionLayer : public keras::KerasLayer {
 public:
  explicit FunctionLayer(nn::ActivationFn fn)
      : KerasLayer("function", "function"), fn_(std::move(fn)) {}
  nn::Module* module() override { return nullptr; }
  Value Apply(const std::vector<Value>& xs, const keras::CallOptions&) override {
    return fn_(xs[0]);
  }
  std::vector<std::pair<std::string, Variable>> KerasWeights() const override { return {}; }

 private:
  nn::ActivationFn fn_;
};

Result<std::unique_ptr<keras::KerasLayer>> MakeLayer(const nlohmann::json& envelope,
                                                     const nlohmann::json& call) {
  // A whole Keras model (Sequential or Functional) runs as the one layer, as when nested.
  if (keras::IsNestedModel(envelope)) {
    return keras::MakeNestedModelLayer(envelope, call.value("seed", 1));
  }
  if (!call.contains("function")) return keras::MakeKerasLayer(envelope, call.value("seed", 1));
  const std::string fn = call["function"].get<std::string>();
  if (fn == "gelu_tanh") {
    return std::unique_ptr<keras::KerasLayer>(
        new FunctionLayer([](const Value& x) { return nn::Gelu(x, /*approximate=*/true); }));
  }
  return InvalidArgumentError("unknown function '" + fn + "'");
}

bool IsFloat(const Tensor& t) { return t.dtype() == DType::kFloat32; }

Status Run(const std::string& dir) {
  TROUPE_ASSIGN_OR_RETURN(nlohmann::json envelope, ReadJson(dir + "/layer.json"));
  TROUPE_ASSIGN_OR_RETURN(nlohmann::json call, ReadJson(dir + "/call.json"));
  TROUPE_ASSIGN_OR_RETURN(std::unique_ptr<keras::KerasLayer> layer, MakeLayer(envelope, call));
  std::vector<Tensor> inputs;
  for (int i = 0; i < call.value("num_inputs", 1); ++i) {
    TROUPE_ASSIGN_OR_RETURN(Tensor t, ReadNpy(dir + "/in_" + std::to_string(i) + ".npy"));
    inputs.push_back(t);
  }
  keras::CallOptions options;
  options.use_causal_mask = call.value("use_causal_mask", false);
  // "mask": [[...], ...]: a Keras [batch, time] mask of input 0 (1 keep, 0 masked).
  if (call.contains("mask")) {
    const nlohmann::json& rows = call["mask"];
    std::vector<float> m;
    for (const auto& row : rows) {
      for (const auto& v : row) m.push_back(v.get<float>());
    }
    const int64_t b = static_cast<int64_t>(rows.size());
    TROUPE_ASSIGN_OR_RETURN(
        Tensor mt, Tensor::FromVector<float>(
                       m, TensorShape{b, b == 0 ? 0 : static_cast<int64_t>(rows[0].size())}));
    options.masks = {Value(mt)};
  }
  // Build with an inference call, then load the weights.
  {
    std::vector<Value> xs(inputs.begin(), inputs.end());
    Value built = layer->Apply(xs, options);
    TROUPE_RETURN_IF_ERROR(built.status());
  }
  std::vector<std::pair<std::string, Variable>> weights = layer->KerasWeights();
  std::ofstream names(dir + "/weights.txt");
  for (size_t k = 0; k < weights.size(); ++k) {
    const Variable& v = weights[k].second;
    names << weights[k].first << " " << v.name() << " " << (v.trainable() ? 1 : 0) << "\n";
    TROUPE_ASSIGN_OR_RETURN(Tensor t, ReadNpy(dir + "/w_" + std::to_string(k) + ".npy"));
    TROUPE_RETURN_IF_ERROR(v.SetValue(t).WithContext("weight " + weights[k].first));
  }
  TROUPE_ASSIGN_OR_RETURN(Tensor cot, ReadNpy(dir + "/cot.npy"));

  options.training = call.value("training", false);
  GradientTape tape(/*persistent=*/true);
  std::vector<Value> xs;
  for (const Tensor& t : inputs) {
    Value x(t);
    if (IsFloat(t)) tape.Watch(x);
    xs.push_back(x);
  }
  // "precision": a Keras dtype policy name the measured call runs under (graph/precision.h).
  TROUPE_ASSIGN_OR_RETURN(DType compute,
                          ParsePrecisionPolicy(call.value("precision", std::string("float32"))));
  PrecisionScope float32(DType::kFloat32);
  Value out;
  {
    PrecisionScope policy(compute);
    out = layer->Apply(xs, options);
  }
  TROUPE_RETURN_IF_ERROR(out.status());
  Value target = ops::Sum(ops::Mul(out, Value(cot)));
  std::vector<Value> float_inputs;
  for (const Value& x : xs) {
    if (x.dtype() == DType::kFloat32) float_inputs.push_back(x);
  }
  TROUPE_ASSIGN_OR_RETURN(std::vector<Value> grad_in, tape.Gradient(target, float_inputs, Value(),
                                                                    UnconnectedGradients::kZero));
  std::vector<Variable> trainable;
  for (auto& [name, v] : weights) {
    if (v.trainable()) trainable.push_back(v);
  }
  TROUPE_ASSIGN_OR_RETURN(std::vector<Value> grad_w,
                          tape.Gradient(target, trainable, UnconnectedGradients::kZero));

  TROUPE_ASSIGN_OR_RETURN(Tensor out_t, out.tensor());
  TROUPE_RETURN_IF_ERROR(WriteNpy(dir + "/out.npy", out_t));
  size_t g = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    if (xs[i].dtype() != DType::kFloat32) continue;
    TROUPE_ASSIGN_OR_RETURN(Tensor t, grad_in[g++].tensor());
    TROUPE_RETURN_IF_ERROR(WriteNpy(dir + "/grad_in_" + std::to_string(i) + ".npy", t));
  }
  g = 0;
  for (size_t k = 0; k < weights.size(); ++k) {
    const Variable& v = weights[k].second;
    TROUPE_RETURN_IF_ERROR(WriteNpy(dir + "/after_w_" + std::to_string(k) + ".npy", v.value()));
    if (!v.trainable()) continue;
    TROUPE_ASSIGN_OR_RETURN(Tensor t, grad_w[g++].tensor());
    TROUPE_RETURN_IF_ERROR(WriteNpy(dir + "/grad_w_" + std::to_string(k) + ".npy", t));
  }
  return Status::OK();
}

}  // namespace
}  // namespace troupe

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: layer_driver DIR\n");
    return 2;
  }
  troupe::Status s = troupe::Run(argv[1]);
  if (!s.ok()) {
    std::fprintf(stderr, "layer_driver: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}
