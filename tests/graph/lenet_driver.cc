// Driver for tests/interop/graph_lenet_test.py: runs Troupe's LeNet on weights and data the
// test wrote as .npy files (weights named by variable path with '/' -> '_', e.g.
// conv1_filter.npy), inside a traced Function, and writes the results as .npy files.
//
//   lenet_driver forward DIR
//       reads x.npy [N,28,28,1] f32, y.npy [N] i32; writes logits.npy, loss.npy and
//       grad_<name>.npy for every trainable variable.
//   lenet_driver init DIR
//       writes glorot_<i>.npy, init_<name>.npy (LeNet seed 7) and dropout_<k>.npy (Dropout
//       0.4, seed 5, applied twice to dropout_x.npy).
//   lenet_driver train DIR adam|sgd STEPS LR [MOMENTUM]
//       reads xs.npy [K,B,28,28,1], ys.npy [K,B]; step s uses batch s % K; writes
//       final_<name>.npy for every variable and losses.npy [STEPS].
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "graph/function.h"
#include "graph/models/lenet.h"
#include "graph/tape.h"
#include "tests/kernels/npy.h"

namespace troupe {
namespace {

using testing_util::ReadNpy;
using testing_util::WriteNpy;

std::string FileName(std::string path) {
  for (char& c : path) {
    if (c == '/') c = '_';
  }
  return path;
}

Status LoadWeights(models::LeNet& model, const std::string& dir) {
  TROUPE_RETURN_IF_ERROR(model.Build());
  for (auto& [path, var] : model.NamedVariables()) {
    TROUPE_ASSIGN_OR_RETURN(Tensor t, ReadNpy(dir + "/" + FileName(path) + ".npy"));
    TROUPE_RETURN_IF_ERROR(var.SetValue(t).WithContext(path));
  }
  return Status::OK();
}

Status Forward(const std::string& dir) {
  models::LeNet model;
  TROUPE_RETURN_IF_ERROR(LoadWeights(model, dir));
  TROUPE_ASSIGN_OR_RETURN(Tensor x, ReadNpy(dir + "/x.npy"));
  TROUPE_ASSIGN_OR_RETURN(Tensor y, ReadNpy(dir + "/y.npy"));
  std::vector<Variable> vars = model.TrainableVariables();
  Function step("lenet_forward", [&](const Args& a) -> Outputs {
    GradientTape tape;
    Value logits = model(a[0]);
    Value loss = nn::SparseCategoricalCrossentropy(a[1], logits);
    auto grads = tape.Gradient(loss, vars);
    if (!grads.ok()) return grads.status();
    std::vector<Value> out = {logits, loss};
    out.insert(out.end(), grads->begin(), grads->end());
    return out;
  });
  TROUPE_ASSIGN_OR_RETURN(std::vector<Tensor> out, step.Run({x, y}));
  TROUPE_RETURN_IF_ERROR(WriteNpy(dir + "/logits.npy", out[0]));
  TROUPE_RETURN_IF_ERROR(WriteNpy(dir + "/loss.npy", out[1]));
  auto named = model.NamedVariables();
  for (size_t i = 0; i < vars.size(); ++i) {
    TROUPE_RETURN_IF_ERROR(
        WriteNpy(dir + "/grad_" + FileName(vars[i].name()) + ".npy", out[2 + i]));
  }
  return Status::OK();
}

Status Train(const std::string& dir, const std::string& kind, int steps, double lr,
             double momentum) {
  models::LeNet model;
  TROUPE_RETURN_IF_ERROR(LoadWeights(model, dir));
  TROUPE_ASSIGN_OR_RETURN(Tensor xs, ReadNpy(dir + "/xs.npy"));
  TROUPE_ASSIGN_OR_RETURN(Tensor ys, ReadNpy(dir + "/ys.npy"));
  std::unique_ptr<nn::Optimizer> opt;
  if (kind == "adam") {
    nn::AdamOptions o;
    o.learning_rate = lr;
    opt = std::make_unique<nn::Adam>(o);
  } else if (kind == "sgd") {
    nn::SgdOptions o;
    o.learning_rate = lr;
    o.momentum = momentum;
    opt = std::make_unique<nn::SGD>(o);
  } else {
    return InvalidArgumentError("optimizer must be adam or sgd, got '" + kind + "'");
  }
  Function train_step("train_step", [&](const Args& a) -> Outputs {
    return models::LeNetTrainStep(model, *opt, a[0], a[1]);
  });
  const int64_t k = xs.dim(0);
  TROUPE_ASSIGN_OR_RETURN(Tensor losses, Tensor::Allocate(DType::kFloat32, TensorShape{steps}));
  for (int s = 0; s < steps; ++s) {
    TROUPE_ASSIGN_OR_RETURN(Tensor xb, xs.Slice(s % k, s % k + 1));
    TROUPE_ASSIGN_OR_RETURN(Tensor yb, ys.Slice(s % k, s % k + 1));
    TensorShape xshape(
        std::vector<int64_t>(xs.shape().dims().begin() + 1, xs.shape().dims().end()));
    TensorShape yshape(
        std::vector<int64_t>(ys.shape().dims().begin() + 1, ys.shape().dims().end()));
    TROUPE_ASSIGN_OR_RETURN(xb, xb.Reshape(xshape));
    TROUPE_ASSIGN_OR_RETURN(yb, yb.Reshape(yshape));
    TROUPE_ASSIGN_OR_RETURN(Tensor loss, train_step.Run1({xb, yb}));
    losses.data<float>()[s] = loss.scalar<float>();
  }
  if (train_step.trace_count() != 2) {  // one trace that creates variables, one to check
    return InternalError("train_step traced " + std::to_string(train_step.trace_count()) +
                         " times, expected 2");
  }
  TROUPE_RETURN_IF_ERROR(WriteNpy(dir + "/losses.npy", losses));
  for (auto& [path, var] : model.NamedVariables()) {
    TROUPE_RETURN_IF_ERROR(WriteNpy(dir + "/final_" + FileName(path) + ".npy", var.value()));
  }
  for (auto& [path, var] : opt->NamedVariables()) {
    TROUPE_RETURN_IF_ERROR(WriteNpy(dir + "/opt_" + FileName(path) + ".npy", var.value()));
  }
  return Status::OK();
}

// Initializers and Dropout against Keras: glorot_uniform(seed 42) for a few shapes, a LeNet's
// default initialization (seeds 7..11), and two training-mode calls of Dropout(0.4, seed 5).
Status Init(const std::string& dir) {
  int i = 0;
  for (TensorShape shape : {TensorShape{5, 5, 1, 6}, TensorShape{400, 120}, TensorShape{84, 10}}) {
    TROUPE_ASSIGN_OR_RETURN(Tensor t, nn::GlorotUniform(42)(shape, DType::kFloat32));
    TROUPE_RETURN_IF_ERROR(WriteNpy(dir + "/glorot_" + std::to_string(i++) + ".npy", t));
  }
  models::LeNetOptions options;
  options.seed = 7;
  models::LeNet model(options);
  TROUPE_RETURN_IF_ERROR(model.Build());
  for (auto& [path, var] : model.NamedVariables()) {
    TROUPE_RETURN_IF_ERROR(WriteNpy(dir + "/init_" + FileName(path) + ".npy", var.value()));
  }
  TROUPE_ASSIGN_OR_RETURN(Tensor x, ReadNpy(dir + "/dropout_x.npy"));
  nn::Dropout dropout("dropout", 0.4, 5);
  Function f("dropout", [&](const Args& a) -> Outputs { return dropout(a[0], true); });
  for (int k = 0; k < 2; ++k) {
    TROUPE_ASSIGN_OR_RETURN(Tensor y, f.Run1({x}));
    TROUPE_RETURN_IF_ERROR(WriteNpy(dir + "/dropout_" + std::to_string(k) + ".npy", y));
  }
  return Status::OK();
}

int Main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr,
                 "usage: lenet_driver forward DIR | train DIR adam|sgd STEPS LR [MOMENTUM]\n");
    return 2;
  }
  const std::string cmd = argv[1];
  Status s;
  if (cmd == "forward") {
    s = Forward(argv[2]);
  } else if (cmd == "init") {
    s = Init(argv[2]);
  } else if (cmd == "train" && argc >= 6) {
    s = Train(argv[2], argv[3], std::atoi(argv[4]), std::atof(argv[5]),
              argc > 6 ? std::atof(argv[6]) : 0.0);
  } else {
    std::fprintf(stderr, "lenet_driver: unknown command '%s'\n", cmd.c_str());
    return 2;
  }
  if (!s.ok()) {
    std::fprintf(stderr, "lenet_driver: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace troupe

int main(int argc, char** argv) { return troupe::Main(argc, argv); }
