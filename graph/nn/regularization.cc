#include "graph/nn/regularization.h"

#include <cmath>

#include "graph/nn/initializers.h"
#include "graph/nn/replica_random.h"
#include "graph/ops.h"
#include "kernels/op_registry.h"
#include "kernels/random/random_ops.h"

namespace troupe::nn {
namespace {

void EnsureRandom() {
  static const bool done = [] {
    if (!OpRegistry::Global().LookupOp("StatelessRandomGetKeyCounter").ok()) {
      random::RegisterRandomOps(OpRegistry::Global());
    }
    return true;
  }();
  (void)done;
}

Value Draw(const char* op, const Value& shape, const std::vector<int64_t>& dims, const Value& seed,
           DType dtype) {
  EnsureRandom();
  if (!seed.ok()) return seed;
  std::vector<Value> kc =
      Apply("StatelessRandomGetKeyCounter", {seed}, {}, "StatelessRandomGetKeyCounter");
  if (!kc[0].ok()) return kc[0];
  Value r = Apply1(op, {shape, kc[0], kc[1], ops::ScalarOf(3, DType::kInt32)},  // AUTO_SELECT
                   {{"dtype", dtype}}, op);
  // The random op's output has no static shape; give it `dims` when that is expressible.
  int unknown = 0;
  for (int64_t d : dims) unknown += d < 0;
  if (unknown <= 1) r = ops::Reshape(r, dims);
  return r;
}

}  // namespace

Value SeedStateInit(int64_t seed) { return Value(Tensor::FromVector<int64_t>({seed, 0})); }

Value NextSeed(const Variable& state) {
  if (std::optional<Value> replica_seed = NextReplicaSeed()) return *replica_seed;
  // SeedGenerator.next(): the current state, then state += [0, 1].
  Value s = state.Read();
  if (Status st = state.AssignAdd(Value(Tensor::FromVector<int64_t>({0, 1}))); !st.ok()) {
    return Value::Error(st);
  }
  return ops::Cast(s, DType::kInt32);
}

std::vector<int64_t> NoiseDims(const Value& x, const std::vector<int64_t>& noise_shape) {
  std::vector<int64_t> dims(x.shape().dims().begin(), x.shape().dims().end());
  for (size_t i = 0; i < noise_shape.size() && i < dims.size(); ++i) {
    if (noise_shape[i] >= 0) dims[i] = noise_shape[i];
  }
  return dims;
}

Value NoiseShape(const Value& x, const std::vector<int64_t>& noise_shape) {
  const std::vector<int64_t> dims = NoiseDims(x, noise_shape);
  bool known = true;
  for (int64_t d : dims) known = known && d >= 0;
  if (known) {
    std::vector<int32_t> v(dims.begin(), dims.end());
    return Value(Tensor::FromVector<int32_t>(v));
  }
  // Some dims are only known at run time: take those from tf.shape(x).
  Value shape = ops::Shape(x, DType::kInt32);
  std::vector<Value> parts;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] >= 0) {
      parts.push_back(Value(Tensor::FromVector<int32_t>({static_cast<int32_t>(dims[i])})));
    } else {
      parts.push_back(ops::Slice(shape, {static_cast<int64_t>(i)}, {1}));
    }
  }
  return ops::Concat(parts, 0);
}

Value StatelessUniform(const Value& shape, const std::vector<int64_t>& dims, const Value& seed,
                       DType dtype) {
  return Draw("StatelessRandomUniformV2", shape, dims, seed, dtype);
}

Value StatelessNormal(const Value& shape, const std::vector<int64_t>& dims, const Value& seed,
                      DType dtype, double mean, double stddev) {
  Value rnd = Draw("StatelessRandomNormalV2", shape, dims, seed, dtype);
  return ops::Add(ops::Mul(rnd, ops::ScalarOf(stddev, dtype)), ops::ScalarOf(mean, dtype));
}

// ------------------------------------------------------------------------- SeededLayer

SeededLayer::SeededLayer(std::string name, std::optional<int64_t> seed)
    : Layer(std::move(name)), seed_(seed ? *seed : NextDefaultSeed()) {}

Status SeededLayer::BuildImpl(const TensorShape&) {
  const int64_t seed = seed_;
  TROUPE_ASSIGN_OR_RETURN(state_,
                          AddVariable(
                              "seed_generator_state", [seed] { return SeedStateInit(seed); },
                              /*trainable=*/false));
  return Status::OK();
}

Value GaussianNoise::Call(const Value& x, bool training) {
  if (!training || stddev_ <= 0) return x;
  return ops::Add(x, StatelessNormal(NoiseShape(x), NoiseDims(x), Next(), x.dtype(), 0.0, stddev_));
}

Value GaussianDropout::Call(const Value& x, bool training) {
  if (!training || rate_ <= 0) return x;
  const double stddev = std::sqrt(rate_ / (1.0 - rate_));
  return ops::Mul(x, StatelessNormal(NoiseShape(x), NoiseDims(x), Next(), x.dtype(), 1.0, stddev));
}

Value AlphaDropout::Call(const Value& x, bool training) {
  if (!training || rate_ <= 0) return x;
  const double alpha = 1.6732632423543772848170429916717;
  const double scale = 1.0507009873554804934193349852946;
  const double alpha_p = -alpha * scale;
  const DType t = x.dtype();
  Value u = StatelessUniform(NoiseShape(x, noise_shape_), NoiseDims(x, noise_shape_), Next(),
                             DType::kFloat32);  // Keras draws in floatx
  Value kept = ops::Cast(ops::GreaterEqual(u, ops::ScalarOf(rate_, DType::kFloat32)), t);
  const double a = std::pow((1 - rate_) * (1 + rate_ * alpha_p * alpha_p), -0.5);
  const double b = -a * alpha_p * rate_;
  Value dropped = ops::Mul(ops::ScalarOf(alpha_p, t), ops::Sub(ops::ScalarOf(1.0, t), kept));
  Value y = ops::Add(ops::Mul(x, kept), dropped);
  return ops::Add(ops::Mul(ops::ScalarOf(a, t), y), ops::ScalarOf(b, t));
}

Value StochasticDepth::Call(const Value& x, bool training) {
  if (!training) return x;
  const double keep = 1.0 - rate_;
  std::vector<int64_t> noise(x.shape().rank(), 1);
  if (!noise.empty()) noise[0] = -1;
  // random_tensor = floor(keep + uniform): keep + u lies in [0, 2), so its floor is
  // (keep + u >= 1), the same bits.
  Value u = StatelessUniform(NoiseShape(x, noise), NoiseDims(x, noise), Next(), x.dtype());
  Value r = ops::Add(ops::ScalarOf(keep, x.dtype()), u);
  Value mask = ops::Cast(ops::GreaterEqual(r, ops::ScalarOf(1.0, x.dtype())), x.dtype());
  return ops::Mul(ops::Div(x, ops::ScalarOf(keep, x.dtype())), mask);
}

}  // namespace troupe::nn
