#include "graph/random/generator.h"

#include <cstring>
#include <random>
#include <string>

#include "kernels/random/philox_blocks.h"
#include "kernels/random/stateless.h"
#include "kernels/random/threefry.h"

namespace troupe::random {
namespace {

Status CheckAlg(RngAlgorithm alg) {
  if (alg != RngAlgorithm::kPhilox && alg != RngAlgorithm::kThreeFry &&
      alg != RngAlgorithm::kAutoSelect) {
    return InvalidArgumentError("Generator: unsupported algorithm id " +
                                std::to_string(static_cast<int>(alg)) +
                                "; use philox, threefry or auto_select");
  }
  return Status::OK();
}

Status CheckStateShape(std::span<const int64_t> state, RngAlgorithm alg, std::string_view what) {
  const size_t want = static_cast<size_t>(StateSize(alg));
  if (state.size() != want) {
    return InvalidArgumentError("Generator: " + std::string(what) + " has " +
                                std::to_string(state.size()) + " elements but the " +
                                std::string(RngAlgorithmName(alg)) + " state is int64[" +
                                std::to_string(want) + "]");
  }
  return Status::OK();
}

Result<std::vector<int64_t>> StateFromTensor(const Tensor& state, RngAlgorithm alg) {
  if (!state.initialized() || state.rank() != 1 || !IsInteger(state.dtype())) {
    return InvalidArgumentError("Generator: state must be a rank-1 integer tensor of shape [" +
                                std::to_string(StateSize(alg)) + "], got " +
                                (state.initialized() ? state.DebugString() : "an empty tensor"));
  }
  std::vector<int64_t> v(static_cast<size_t>(state.num_elements()));
  for (size_t i = 0; i < v.size(); ++i) {
    switch (state.dtype()) {
      case DType::kInt64:
      case DType::kUInt64:
        v[i] = static_cast<const int64_t*>(state.raw_data())[i];
        break;
      case DType::kInt32:
        v[i] = state.data<int32_t>()[i];
        break;
      case DType::kUInt32:
        v[i] = state.data<uint32_t>()[i];
        break;
      default:
        return InvalidArgumentError("Generator: state dtype " +
                                    std::string(DTypeName(state.dtype())) +
                                    " is not supported; use int64");
    }
  }
  TROUPE_RETURN_IF_ERROR(CheckStateShape(v, alg, "state " + state.shape().ToString()));
  return v;
}

// create_rng_state for a list: truncate to the state size, left-pad with zeros.
std::vector<int64_t> StateFromList(std::span<const int64_t> seed, RngAlgorithm alg) {
  const size_t n = static_cast<size_t>(StateSize(alg));
  const size_t take = std::min(n, seed.size());
  std::vector<int64_t> state(n - take, 0);
  state.insert(state.end(), seed.begin(), seed.begin() + static_cast<std::ptrdiff_t>(take));
  return state;
}

std::vector<int64_t> StateFromSeedInt(const SeedInt& seed, RngAlgorithm alg) {
  std::vector<int64_t> state(static_cast<size_t>(StateSize(alg)));
  for (size_t i = 0; i < state.size(); ++i) state[i] = static_cast<int64_t>(seed.Chunk(i));
  return state;
}

int64_t* Words(const Tensor& t) { return static_cast<int64_t*>(t.raw_data()); }

}  // namespace

Generator::Generator(RngAlgorithm alg, Tensor state)
    : alg_(alg), state_(std::move(state)), mu_(std::make_unique<std::mutex>()) {}
Generator::Generator(Generator&&) noexcept = default;
Generator& Generator::operator=(Generator&&) noexcept = default;
Generator::~Generator() = default;

Result<Generator> Generator::Make(RngAlgorithm alg, std::span<const int64_t> state) {
  TROUPE_RETURN_IF_ERROR(CheckAlg(alg));
  TROUPE_RETURN_IF_ERROR(CheckStateShape(state, alg, "state"));
  TROUPE_ASSIGN_OR_RETURN(Tensor t, Tensor::Allocate(DType::kInt64, TensorShape{StateSize(alg)}));
  std::memcpy(t.raw_data(), state.data(), state.size() * sizeof(int64_t));
  return Generator(alg, std::move(t));
}

Result<Generator> Generator::FromSeed(int64_t seed, RngAlgorithm alg) {
  return FromSeed(SeedInt::FromInt64(seed), alg);
}

Result<Generator> Generator::FromSeed(const SeedInt& seed, RngAlgorithm alg) {
  TROUPE_RETURN_IF_ERROR(CheckAlg(alg));
  return Make(alg, StateFromSeedInt(seed, alg));
}

Result<Generator> Generator::FromSeedList(std::span<const int64_t> seed, RngAlgorithm alg) {
  TROUPE_RETURN_IF_ERROR(CheckAlg(alg));
  return Make(alg, StateFromList(seed, alg));
}

Result<Generator> Generator::FromState(const Tensor& state, RngAlgorithm alg) {
  TROUPE_RETURN_IF_ERROR(CheckAlg(alg));
  TROUPE_ASSIGN_OR_RETURN(std::vector<int64_t> v, StateFromTensor(state, alg));
  return Make(alg, v);
}

Result<Generator> Generator::FromState(std::span<const int64_t> state, RngAlgorithm alg) {
  return Make(alg, state);
}

Result<Generator> Generator::FromKeyCounter(int64_t key, std::span<const int64_t> counter,
                                            RngAlgorithm alg) {
  TROUPE_RETURN_IF_ERROR(CheckAlg(alg));
  if (counter.size() != static_cast<size_t>(StateSize(alg) - 1)) {
    return InvalidArgumentError("Generator: counter has " + std::to_string(counter.size()) +
                                " elements but " + std::string(RngAlgorithmName(alg)) + " needs " +
                                std::to_string(StateSize(alg) - 1));
  }
  std::vector<int64_t> state(counter.begin(), counter.end());
  state.push_back(key);
  return Make(alg, state);
}

Result<Generator> Generator::FromNonDeterministicState(RngAlgorithm alg) {
  TROUPE_RETURN_IF_ERROR(CheckAlg(alg));
  std::random_device rd;
  std::vector<int64_t> state(static_cast<size_t>(StateSize(alg)));
  for (int64_t& w : state) {
    w = static_cast<int64_t>((uint64_t{rd()} << 32) | rd());
  }
  return Make(alg, state);
}

Status Generator::Reset(const Tensor& state) {
  TROUPE_ASSIGN_OR_RETURN(std::vector<int64_t> v, StateFromTensor(state, alg_));
  std::lock_guard<std::mutex> lock(*mu_);
  std::memcpy(state_.raw_data(), v.data(), v.size() * sizeof(int64_t));
  return Status::OK();
}

Status Generator::ResetFromSeed(int64_t seed) { return ResetFromSeed(SeedInt::FromInt64(seed)); }

Status Generator::ResetFromSeed(const SeedInt& seed) {
  const std::vector<int64_t> v = StateFromSeedInt(seed, alg_);
  std::lock_guard<std::mutex> lock(*mu_);
  std::memcpy(state_.raw_data(), v.data(), v.size() * sizeof(int64_t));
  return Status::OK();
}

Status Generator::ResetFromSeedList(std::span<const int64_t> seed) {
  const std::vector<int64_t> v = StateFromList(seed, alg_);
  std::lock_guard<std::mutex> lock(*mu_);
  std::memcpy(state_.raw_data(), v.data(), v.size() * sizeof(int64_t));
  return Status::OK();
}

Status Generator::ResetFromKeyCounter(int64_t key, std::span<const int64_t> counter) {
  TROUPE_ASSIGN_OR_RETURN(Generator g, FromKeyCounter(key, counter, alg_));
  std::lock_guard<std::mutex> lock(*mu_);
  std::memcpy(state_.raw_data(), g.state_.raw_data(), g.state_.byte_size());
  return Status::OK();
}

int64_t Generator::key() const {
  std::lock_guard<std::mutex> lock(*mu_);
  return Words(state_)[StateSize(alg_) - 1];
}

KeyCounter Generator::ReadAndSkip(uint64_t delta) {
  std::lock_guard<std::mutex> lock(*mu_);
  int64_t* s = Words(state_);
  const uint64_t skip = delta * 256;  // uint64 arithmetic, as the kernels do
  KeyCounter old;
  if (alg_ == RngAlgorithm::kThreeFry) {
    old.key = static_cast<uint64_t>(s[1]);
    old.counter = {static_cast<uint64_t>(s[0]), 0};
    s[0] = static_cast<int64_t>(static_cast<uint64_t>(s[0]) + skip);
  } else {
    old.key = static_cast<uint64_t>(s[2]);
    old.counter = {static_cast<uint64_t>(s[0]), static_cast<uint64_t>(s[1])};
    Philox4x32 p = PhiloxAt(old);
    p.Skip(skip);
    const KeyCounter moved = KeyCounterOf(p);
    s[0] = static_cast<int64_t>(moved.counter[0]);
    s[1] = static_cast<int64_t>(moved.counter[1]);
  }
  return old;
}

Result<Tensor> Generator::Skip(int64_t delta) {
  const KeyCounter old = ReadAndSkip(static_cast<uint64_t>(delta));
  TROUPE_ASSIGN_OR_RETURN(Tensor out, Tensor::Zeros(DType::kInt64, TensorShape{3}));
  int64_t* o = Words(out);
  if (alg_ == RngAlgorithm::kThreeFry) {
    o[0] = static_cast<int64_t>(old.counter[0]);
    o[1] = static_cast<int64_t>(old.key);
  } else {
    o[0] = static_cast<int64_t>(old.counter[0]);
    o[1] = static_cast<int64_t>(old.counter[1]);
    o[2] = static_cast<int64_t>(old.key);
  }
  return out;
}

Result<Tensor> Generator::Draw(RandomSpec spec, const TensorShape& shape) {
  spec.alg = alg_;
  // Validate before touching the state, so a bad call does not move the stream.
  TROUPE_RETURN_IF_ERROR(ValidateRandomSpec(spec));
  if (!shape.IsFullyDefined()) {
    return InvalidArgumentError("Generator: shape " + shape.ToString() + " must be fully defined");
  }
  TROUPE_ASSIGN_OR_RETURN(Tensor out, Tensor::Allocate(spec.dtype, shape));
  spec.key_counter = ReadAndSkip(static_cast<uint64_t>(shape.num_elements()));
  if (replica_id_) spec.key_counter.key = ReplicaKey(spec.key_counter.key, alg_, *replica_id_);
  TROUPE_RETURN_IF_ERROR(FillRandom(spec, shape, out.raw_data()));
  return out;
}

Result<Tensor> Generator::Normal(const TensorShape& shape, double mean, double stddev,
                                 DType dtype) {
  TROUPE_ASSIGN_OR_RETURN(
      Tensor rnd, Draw({.dist = Distribution::kNormal, .dtype = dtype, .key_counter = {}}, shape));
  return ApplyMeanStddev(std::move(rnd), mean, stddev,
                         ResolveAlgorithm(alg_) == RngAlgorithm::kThreeFry);
}

Result<Tensor> Generator::TruncatedNormal(const TensorShape& shape, double mean, double stddev,
                                          DType dtype) {
  TROUPE_ASSIGN_OR_RETURN(
      Tensor rnd,
      Draw({.dist = Distribution::kTruncatedNormal, .dtype = dtype, .key_counter = {}}, shape));
  return ApplyMeanStddev(std::move(rnd), mean, stddev,
                         ResolveAlgorithm(alg_) == RngAlgorithm::kThreeFry);
}

Result<Tensor> Generator::Uniform(const TensorShape& shape, double minval, double maxval,
                                  DType dtype) {
  TROUPE_ASSIGN_OR_RETURN(
      Tensor rnd, Draw({.dist = Distribution::kUniform, .dtype = dtype, .key_counter = {}}, shape));
  return ApplyUniformRange(std::move(rnd), minval, maxval,
                           ResolveAlgorithm(alg_) == RngAlgorithm::kThreeFry);
}

Result<Tensor> Generator::UniformInt(const TensorShape& shape, int64_t minval, int64_t maxval,
                                     DType dtype) {
  RandomSpec spec{.dist = Distribution::kUniformInt, .dtype = dtype, .key_counter = {}};
  TROUPE_RETURN_IF_ERROR(SetIntRange(spec, minval, maxval));
  return Draw(spec, shape);
}

Result<Tensor> Generator::UniformFullInt(const TensorShape& shape, DType dtype) {
  return Draw({.dist = Distribution::kUniformFullInt, .dtype = dtype, .key_counter = {}}, shape);
}

Result<Tensor> Generator::MakeSeeds(int64_t count) {
  if (count < 0) {
    return InvalidArgumentError("Generator.make_seeds: count must be >= 0, got " +
                                std::to_string(count));
  }
  TROUPE_ASSIGN_OR_RETURN(Tensor keys, UniformFullInt(TensorShape{count}, DType::kInt64));
  TROUPE_ASSIGN_OR_RETURN(Tensor seeds, Tensor::Zeros(DType::kInt64, TensorShape{2, count}));
  std::memcpy(seeds.raw_data(), keys.raw_data(), keys.byte_size());
  return seeds;
}

Result<std::vector<Generator>> Generator::Split(int64_t count) {
  if (count < 0) {
    return InvalidArgumentError("Generator.split: count must be >= 0, got " +
                                std::to_string(count));
  }
  TROUPE_ASSIGN_OR_RETURN(Tensor keys, UniformFullInt(TensorShape{count}, DType::kInt64));
  std::vector<Generator> children;
  children.reserve(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    std::vector<int64_t> state(static_cast<size_t>(StateSize(alg_)), 0);
    state.back() = keys.data<int64_t>()[i];
    TROUPE_ASSIGN_OR_RETURN(Generator child, Make(alg_, state));
    child.replica_id_ = replica_id_;
    children.push_back(std::move(child));
  }
  return children;
}

uint64_t ReplicaKey(uint64_t key, RngAlgorithm alg, int64_t replica_id) {
  const uint64_t rid = static_cast<uint64_t>(replica_id);
  if (ResolveAlgorithm(alg) == RngAlgorithm::kThreeFry) {
    const ThreeFry2x32::Block w = ThreeFry2x32::Compute64(rid, key);
    return uint64_t{w[0]} | (uint64_t{w[1]} << 32);
  }
  const Philox4x32::Block w = Philox4x32::Compute({Philox4x32::Lo(rid), Philox4x32::Hi(rid), 0, 0},
                                                  {Philox4x32::Lo(key), Philox4x32::Hi(key)});
  return Philox4x32::Join(w[0], w[1]);
}

Result<KeyCounter> ReplicaKeyCounter(const Tensor& job_state, RngAlgorithm alg,
                                     int64_t replica_id) {
  TROUPE_RETURN_IF_ERROR(CheckAlg(alg));
  TROUPE_ASSIGN_OR_RETURN(std::vector<int64_t> s, StateFromTensor(job_state, alg));
  KeyCounter kc;
  kc.key = ReplicaKey(static_cast<uint64_t>(s.back()), alg, replica_id);
  kc.counter[0] = static_cast<uint64_t>(s[0]);
  if (CounterSize(alg) == 2) kc.counter[1] = static_cast<uint64_t>(s[1]);
  return kc;
}

Result<Tensor> ReplicaState(const Tensor& job_state, RngAlgorithm alg, int64_t replica_id) {
  TROUPE_ASSIGN_OR_RETURN(KeyCounter kc, ReplicaKeyCounter(job_state, alg, replica_id));
  TROUPE_ASSIGN_OR_RETURN(Tensor out, Tensor::Allocate(DType::kInt64, TensorShape{StateSize(alg)}));
  int64_t* o = Words(out);
  o[0] = static_cast<int64_t>(kc.counter[0]);
  if (CounterSize(alg) == 2) o[1] = static_cast<int64_t>(kc.counter[1]);
  o[StateSize(alg) - 1] = static_cast<int64_t>(kc.key);
  return out;
}

namespace {
std::mutex& GlobalMutex() {
  static std::mutex mu;
  return mu;
}
std::unique_ptr<Generator>& GlobalSlot() {
  static std::unique_ptr<Generator> slot;
  return slot;
}
}  // namespace

Generator& GetGlobalGenerator() {
  std::lock_guard<std::mutex> lock(GlobalMutex());
  std::unique_ptr<Generator>& slot = GlobalSlot();
  if (!slot) slot = std::make_unique<Generator>(*Generator::FromNonDeterministicState());
  return *slot;
}

void SetGlobalGenerator(Generator generator) {
  std::lock_guard<std::mutex> lock(GlobalMutex());
  // Assign in place: references handed out by GetGlobalGenerator stay valid.
  std::unique_ptr<Generator>& slot = GlobalSlot();
  if (slot) {
    *slot = std::move(generator);
  } else {
    slot = std::make_unique<Generator>(std::move(generator));
  }
}

}  // namespace troupe::random
