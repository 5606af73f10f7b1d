// Driver for tests/interop/optimizers_keras_test.py: applies an OptimizerConfig to a few
// variables with given gradients and writes the results and a Keras-layout checkpoint.
//
//   optimizer_driver <spec.json>
// spec: {"config": {OptimizerConfig fields by name}, "vars": [{"name": "dense/kernel",
//        "shape": [3, 4]}, ...], "steps": S, "more_steps": M, "data": "<file>", "out": "<dir>"}
// data: float32 initial weights (vars in order), then S + M steps of gradients (each step
//       every var in order), each micro-batch already summed/averaged by the caller.
// out:  weights_a.bin (after S steps), optvars_a.bin (Keras' _variables after S steps, float
//       ones, in order, iteration skipped), ckpt/ (a checkpoint after S steps),
//       weights_b.bin (after S + M), lr.txt (LearningRateAt per step).
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "checkpoint/keras_layout.h"
#include "checkpoint/object_checkpoint.h"
#include "checkpoint/trackable.h"
#include "graph/nn/optimizer_config.h"

namespace troupe {
namespace {

using json = nlohmann::json;

nn::OptimizerConfig ParseConfig(const json& j) {
  nn::OptimizerConfig c;
  c.name = j.value("name", c.name);
  c.learning_rate = j.value("learning_rate", c.learning_rate);
  c.beta_1 = j.value("beta_1", c.beta_1);
  if (j.contains("beta_2")) c.beta_2 = j["beta_2"].get<double>();
  c.epsilon = j.value("epsilon", c.epsilon);
  c.momentum = j.value("momentum", c.momentum);
  c.nesterov = j.value("nesterov", c.nesterov);
  c.rho = j.value("rho", c.rho);
  c.centered = j.value("centered", c.centered);
  c.initial_accumulator_value = j.value("initial_accumulator_value", c.initial_accumulator_value);
  if (j.contains("weight_decay") && !j["weight_decay"].is_null()) {
    c.weight_decay = j["weight_decay"].get<double>();
  }
  c.no_decay = j.value("no_decay", c.no_decay);
  c.clipnorm = j.value("clipnorm", 0.0);
  c.global_clipnorm = j.value("global_clipnorm", 0.0);
  c.clipvalue = j.value("clipvalue", 0.0);
  c.use_ema = j.value("use_ema", false);
  c.ema_momentum = j.value("ema_momentum", c.ema_momentum);
  c.ema_overwrite_frequency = j.value("ema_overwrite_frequency", int64_t{0});
  c.gradient_accumulation_steps = j.value("gradient_accumulation_steps", int64_t{1});
  if (j.contains("schedule")) {
    const json& s = j["schedule"];
    nn::ScheduleConfig& sc = c.schedule;
    sc.kind = s.value("kind", sc.kind);
    sc.warmup_steps = s.value("warmup_steps", sc.warmup_steps);
    if (s.contains("warmup_target")) sc.warmup_target = s["warmup_target"].get<double>();
    sc.decay_steps = s.value("decay_steps", sc.decay_steps);
    sc.alpha = s.value("alpha", sc.alpha);
    sc.boundaries = s.value("boundaries", sc.boundaries);
    sc.values = s.value("values", sc.values);
    sc.decay_rate = s.value("decay_rate", sc.decay_rate);
    sc.staircase = s.value("staircase", sc.staircase);
    sc.end_learning_rate = s.value("end_learning_rate", sc.end_learning_rate);
    sc.power = s.value("power", sc.power);
    sc.cycle = s.value("cycle", sc.cycle);
  }
  return c;
}

void WriteFloats(const std::string& path, const std::vector<Variable>& vars) {
  std::ofstream out(path, std::ios::binary);
  for (const Variable& v : vars) {
    Tensor t = v.value();
    out.write(static_cast<const char*>(t.raw_data()), t.byte_size());
  }
}

Status Run(const std::string& spec_path) {
  std::ifstream spec_in(spec_path);
  const json spec = json::parse(spec_in);
  const nn::OptimizerConfig config = ParseConfig(spec["config"]);
  TROUPE_ASSIGN_OR_RETURN(std::unique_ptr<nn::Optimizer> opt, nn::MakeOptimizer(config));
  std::ifstream data(spec["data"].get<std::string>(), std::ios::binary);
  auto read = [&](const TensorShape& shape) {
    Tensor t = *Tensor::Zeros(DType::kFloat32, shape);
    data.read(static_cast<char*>(t.raw_data()), t.byte_size());
    return t;
  };
  std::vector<Variable> vars;
  for (const json& v : spec["vars"]) {
    TROUPE_ASSIGN_OR_RETURN(TensorShape shape,
                            TensorShape::FromDims(v["shape"].get<std::vector<int64_t>>()));
    TROUPE_ASSIGN_OR_RETURN(Variable var,
                            Variable::Create(Value(read(shape)), v["name"].get<std::string>()));
    vars.push_back(var);
  }
  const std::string out = spec["out"];
  std::filesystem::create_directories(out);
  std::ofstream lr_out(out + "/lr.txt");
  lr_out.precision(9);
  const int64_t steps = spec["steps"], more = spec["more_steps"];
  for (int64_t s = 0; s < steps + more; ++s) {
    std::vector<Value> grads;
    for (const Variable& v : vars) grads.emplace_back(read(v.shape()));
    const int64_t it = opt->built() ? opt->iterations().value().scalar<int64_t>() : 0;
    lr_out << opt->LearningRateAt(it) << "\n";
    TROUPE_RETURN_IF_ERROR(opt->ApplyGradients(grads, vars));
    if (s + 1 != steps) continue;
    WriteFloats(out + "/weights_a.bin", vars);
    std::vector<Variable> floats;
    const nn::KerasOptimizerVariables k = opt->KerasVariables();
    for (const Variable& v : k.variables) {
      if (v.dtype() == DType::kFloat32) floats.push_back(v);
    }
    WriteFloats(out + "/optvars_a.bin", floats);
    // The checkpoint: copies of the variables in Keras' optimizer layout.
    std::map<int64_t, std::unique_ptr<ckpt::VariableTrackable>> copies;
    auto track = [&](const Variable& v) -> ckpt::Trackable* {
      auto& c = copies[v.id()];
      if (!c) c = std::make_unique<ckpt::VariableTrackable>(v.name(), v.value().DeepCopy());
      return c.get();
    };
    std::vector<ckpt::Trackable*> trainable, variables;
    for (const Variable& v : vars) trainable.push_back(track(v));
    for (const Variable& v : k.variables) variables.push_back(track(v));
    std::vector<std::pair<std::string, std::vector<ckpt::Trackable*>>> lists;
    for (const auto& [name, vs] : k.lists) {
      std::vector<ckpt::Trackable*> per_var;
      for (const Variable& v : vs) per_var.push_back(track(v));
      lists.emplace_back(name, per_var);
    }
    ckpt::KerasOptimizerLayout layout(track(k.iterations),
                                      k.learning_rate.valid() ? track(k.learning_rate) : nullptr,
                                      trainable, variables, lists);
    ckpt::Checkpoint root;
    root.Track("optimizer", &layout);
    TROUPE_RETURN_IF_ERROR(root.Save(out + "/ckpt/ckpt").status());
  }
  WriteFloats(out + "/weights_b.bin", vars);
  return Status::OK();
}

}  // namespace
}  // namespace troupe

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: optimizer_driver <spec.json>\n";
    return 2;
  }
  troupe::Status s = troupe::Run(argv[1]);
  if (!s.ok()) {
    std::cerr << s.ToString() << "\n";
    return 1;
  }
  return 0;
}
