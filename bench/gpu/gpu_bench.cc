// GPU benchmarks (run where a GPU is; bench/gpu/gpu_compare.py runs them next to PyTorch):
//   gpu_bench MODEL BATCH STEPS    MODEL = lenet | convnet
// times a Troupe training step on gpu:0 two ways, as the trainer runs it:
//   full:    forward + backward + Adam, weights and slots on the GPU (one replica);
//   compute: forward + backward alone.
//   gpu_bench allreduce BYTES ITERS
// times a one-rank NCCL allreduce of float32 on gpu:0 (the NcclCommunicator path).
// Each prints one JSON line.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "collectives/nccl_communicator.h"
#include "core/gpu.h"
#include "graph/function.h"
#include "graph/models/lenet.h"
#include "graph/nn/layers.h"
#include "graph/nn/losses.h"
#include "graph/nn/optimizers.h"
#include "graph/tape.h"

namespace troupe {
namespace {

// A larger conv net for 32x32x3 inputs: 2x(conv3x3 32) -> pool -> 2x(conv3x3 64) -> pool ->
// dense 256 -> dense 10 (1.1 M parameters; the shape of a small CIFAR model).
class ConvNet : public nn::Module {
 public:
  ConvNet()
      : nn::Module("convnet"),
        c1("c1", 32, {3, 3}, Conv("SAME", 1)),
        c2("c2", 32, {3, 3}, Conv("SAME", 2)),
        p1("p1", nn::Pool2D::Kind::kMax),
        c3("c3", 64, {3, 3}, Conv("SAME", 3)),
        c4("c4", 64, {3, 3}, Conv("SAME", 4)),
        p2("p2", nn::Pool2D::Kind::kMax),
        fc1("fc1", 256, Dense(nn::Activation::kRelu, 5)),
        fc2("fc2", 10, Dense(nn::Activation::kNone, 6)) {
    for (nn::Module* m : std::vector<nn::Module*>{&c1, &c2, &p1, &c3, &c4, &p2, &flat, &fc1, &fc2})
      AddModule(m);
  }
  Value operator()(const Value& x, bool training) {
    Value y = p1(c2(c1(x, training), training), training);
    y = p2(c4(c3(y, training), training), training);
    return fc2(fc1(flat(y, training), training), training);
  }

 private:
  static nn::Conv2DOptions Conv(const std::string& padding, int64_t seed) {
    nn::Conv2DOptions o;
    o.padding = padding;
    o.activation = nn::Activation::kRelu;
    o.seed = seed;
    return o;
  }
  static nn::DenseOptions Dense(nn::Activation a, int64_t seed) {
    nn::DenseOptions o;
    o.activation = a;
    o.seed = seed;
    return o;
  }
  nn::Conv2D c1, c2;
  nn::Pool2D p1;
  nn::Conv2D c3, c4;
  nn::Pool2D p2;
  nn::Flatten flat{"flatten"};
  nn::Dense fc1, fc2;
};

double Seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

template <typename Model>
int TrainBench(const std::string& name, Model& model, TensorShape image_shape, int batch,
               int steps) {
  const Device gpu0 = Device::Gpu(0);
  std::vector<int64_t> dims = {batch};
  for (int64_t d : image_shape.dims()) dims.push_back(d);
  TensorShape in_shape(dims);
  std::mt19937 gen(1);
  std::uniform_real_distribution<float> u(0, 1);
  std::vector<float> pixels(static_cast<size_t>(in_shape.num_elements()));
  for (float& p : pixels) p = u(gen);
  std::vector<int32_t> labels(static_cast<size_t>(batch));
  for (int32_t& l : labels) l = static_cast<int32_t>(gen() % 10);
  Tensor images = *Tensor::FromVector(pixels, in_shape);
  Tensor label_t = *Tensor::FromVector(labels, TensorShape{batch});
  {  // build the variables eagerly on the host
    InitScope eager;
    std::vector<int64_t> one = dims;
    one[0] = 1;
    Value v = model(Value(*Tensor::Zeros(DType::kFloat32, TensorShape(one))), false);
    if (!v.ok()) return std::fprintf(stderr, "build: %s\n", v.status().ToString().c_str()), 1;
  }
  std::vector<Variable> vars = model.TrainableVariables();
  nn::Adam adam(nn::AdamOptions{1e-3, 0.9, 0.999, 1e-7});
  if (!adam.Build(vars).ok()) return 1;
  // As the trainer does for one GPU: weights and Adam slots live on the GPU.
  if (!nn::PlaceWeightsAndSlots(vars, adam, gpu0).ok()) return 1;
  Function step(
      "train_step",
      [&model, vars](const Args& a) -> Outputs {
        GradientTape tape;
        Value logits = model(a[0].value(), true);
        Value loss = nn::SparseCategoricalCrossentropy(a[1].value(), logits, true);
        Result<std::vector<Value>> grads = tape.Gradient(loss, vars);
        if (!grads.ok()) return grads.status();
        std::vector<Value> out = {loss};
        out.insert(out.end(), grads->begin(), grads->end());
        return out;
      },
      FunctionOptions{{"images", "labels"}, std::nullopt, false, gpu0});
  Function apply("apply", [&adam, vars](const Args& a) -> Outputs {
    std::vector<Value> g;
    for (const Arg& x : a[0].list()) g.push_back(x.value());
    Status s = adam.ApplyGradients(g, vars);
    if (!s.ok()) return s;
    return std::vector<Value>{};
  });
  Tensor dev_images = *gpu::CopyTo(images, gpu0), dev_labels = *gpu::CopyTo(label_t, gpu0);
  auto full_step = [&]() -> Status {
    TROUPE_ASSIGN_OR_RETURN(std::vector<Tensor> out, step.Run({dev_images, dev_labels}));
    std::vector<Arg> grads(out.begin() + 1, out.end());
    return apply.Run({Arg(std::move(grads))}).status();
  };
  auto compute_step = [&]() -> Status { return step.Run({dev_images, dev_labels}).status(); };
  auto time = [&](auto fn, int n) -> double {
    for (int i = 0; i < 5; ++i) {
      if (Status s = fn(); !s.ok()) {
        std::fprintf(stderr, "%s\n", s.ToString().c_str());
        std::exit(1);
      }
    }
    (void)gpu::Synchronize(0);
    double t0 = Seconds();
    for (int i = 0; i < n; ++i) (void)fn();
    (void)gpu::Synchronize(0);
    return (Seconds() - t0) / n;
  };
  double full = time(full_step, steps);
  double compute = time(compute_step, steps);
  size_t params = 0;
  for (const Variable& v : vars) params += static_cast<size_t>(v.shape().num_elements());
  std::printf(
      "{\"bench\": \"%s\", \"batch\": %d, \"params\": %zu, \"full_step_ms\": %.4f, "
      "\"compute_step_ms\": %.4f, \"examples_per_s\": %.0f}\n",
      name.c_str(), batch, params, full * 1e3, compute * 1e3, batch / full);
  return 0;
}

int AllReduceBench(size_t bytes, int iters) {
#if TROUPE_COLLECTIVES_WITH_NCCL
  auto id = NcclCommunicator::NewUniqueId();
  if (!id.ok()) return std::fprintf(stderr, "%s\n", id.status().ToString().c_str()), 1;
  auto comm = NcclCommunicator::Create(ProcessGroup::SingleProcess(1), CollectiveOptions{}, *id, 0);
  if (!comm.ok()) return std::fprintf(stderr, "%s\n", comm.status().ToString().c_str()), 1;
  const int64_t n = static_cast<int64_t>(bytes / 4);
  Tensor host = *Tensor::Zeros(DType::kFloat32, TensorShape{n});
  Tensor t = *gpu::CopyTo(host, Device::Gpu(0));
  for (int i = 0; i < 3; ++i) (void)(*comm)->AllReduce({t}, ReduceOp::kSum)->Wait();
  double t0 = Seconds();
  for (int i = 0; i < iters; ++i) (void)(*comm)->AllReduce({t}, ReduceOp::kSum)->Wait();
  double per = (Seconds() - t0) / iters;
  std::printf("{\"bench\": \"allreduce\", \"bytes\": %zu, \"us\": %.2f, \"algbw_GBps\": %.2f}\n",
              bytes, per * 1e6, bytes / per / 1e9);
  return 0;
#else
  (void)bytes, (void)iters;
  std::fprintf(stderr, "built without NCCL\n");
  return 1;
#endif
}

}  // namespace
}  // namespace troupe

int main(int argc, char** argv) {
  using namespace troupe;
  if (argc < 4) {
    std::fprintf(stderr, "usage: gpu_bench lenet|convnet BATCH STEPS | allreduce BYTES ITERS\n");
    return 2;
  }
  if (gpu::DeviceCount() == 0) {
    std::fprintf(stderr, "gpu_bench: no GPU visible\n");
    return 1;
  }
  std::string what = argv[1];
  if (what == "allreduce") return AllReduceBench(std::stoull(argv[2]), std::atoi(argv[3]));
  const int batch = std::atoi(argv[2]), steps = std::atoi(argv[3]);
  if (what == "lenet") {
    models::LeNet model;
    return TrainBench("lenet", model, TensorShape{28, 28, 1}, batch, steps);
  }
  if (what == "convnet") {
    ConvNet model;
    return TrainBench("convnet", model, TensorShape{32, 32, 3}, batch, steps);
  }
  std::fprintf(stderr, "gpu_bench: unknown benchmark '%s'\n", what.c_str());
  return 2;
}
