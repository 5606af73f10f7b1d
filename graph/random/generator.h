// Generator: TF's stateful tf.random.Generator. Its whole state is one int64 tensor in TF's
// layout — Philox [counter_lo, counter_hi, key], ThreeFry [counter, key] — checkpointed under
// TF's attribute name `_state_var`. Every draw of n elements reads the state, advances the
// counter by 256 * n (TF's RngReadAndSkip) and runs the stateless kernel on the old
// (key, counter), so streams equal TF's bit for bit: Philox as TF's CPU kernels, ThreeFry as
// TF under XLA (jit_compile=True).
//
// Distribution strategies: a generator in "replica context" (set_replica_id) hashes its key
// with the replica id on every draw, exactly as TF does for a generator created inside a
// strategy scope, while the stored state stays unhashed (so one checkpoint restores into any
// replica count). ReplicaKeyCounter/ReplicaState are the pure forms the coordinator hands to
// workers.
//
// Until graph/ Variables are wired in, the state is a Tensor member: state() returns it (the
// buffer is shared, so it always shows the current state) and set_state() replaces it.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "core/tensor.h"
#include "graph/random/seed.h"
#include "kernels/random/random_ops.h"
#include "kernels/random/rng_alg.h"

namespace troupe::random {

class Generator {
 public:
  // The attribute TF's Generator saves its state under (object-graph key
  // "<path>/_state_var/.ATTRIBUTES/VARIABLE_VALUE").
  static constexpr std::string_view kStateVarName = "_state_var";

  // TF's from_seed: an integer seed is cut into 64-bit chunks, least significant first (two's
  // complement, so -1 fills every word with ones); the default algorithm is PHILOX.
  static Result<Generator> FromSeed(int64_t seed, RngAlgorithm alg = RngAlgorithm::kPhilox);
  static Result<Generator> FromSeed(const SeedInt& seed, RngAlgorithm alg = RngAlgorithm::kPhilox);
  // A list seed is truncated to the state size and left-padded with zeros ([12, 34] -> Philox
  // state [0, 12, 34]).
  static Result<Generator> FromSeedList(std::span<const int64_t> seed,
                                        RngAlgorithm alg = RngAlgorithm::kPhilox);
  static Result<Generator> FromState(const Tensor& state, RngAlgorithm alg);
  static Result<Generator> FromState(std::span<const int64_t> state, RngAlgorithm alg);
  // state = counter ++ [key]; counter has StateSize(alg) - 1 words.
  static Result<Generator> FromKeyCounter(int64_t key, std::span<const int64_t> counter,
                                          RngAlgorithm alg);
  // Every state word from the OS's random source (TF's NonDeterministicInts).
  static Result<Generator> FromNonDeterministicState(RngAlgorithm alg = RngAlgorithm::kPhilox);

  Generator(Generator&&) noexcept;
  Generator& operator=(Generator&&) noexcept;
  Generator(const Generator&) = delete;
  Generator& operator=(const Generator&) = delete;
  ~Generator();

  Status Reset(const Tensor& state);
  Status ResetFromSeed(int64_t seed);
  Status ResetFromSeed(const SeedInt& seed);
  Status ResetFromSeedList(std::span<const int64_t> seed);
  Status ResetFromKeyCounter(int64_t key, std::span<const int64_t> counter);

  RngAlgorithm algorithm() const { return alg_; }
  // The int64 state tensor (shared buffer: it reflects later draws).
  Tensor state() const { return state_; }
  Status set_state(const Tensor& state) { return Reset(state); }
  int64_t key() const;

  // TF's skip(delta): advances the counter by 256 * delta (mod 2^64; Philox with TF's carry
  // rule) and returns the old state padded to int64[3] (ThreeFry: [counter, key, 0]).
  Result<Tensor> Skip(int64_t delta);

  Result<Tensor> Normal(const TensorShape& shape, double mean = 0.0, double stddev = 1.0,
                        DType dtype = DType::kFloat32);
  Result<Tensor> TruncatedNormal(const TensorShape& shape, double mean = 0.0, double stddev = 1.0,
                                 DType dtype = DType::kFloat32);
  // Float dtypes: rnd * (maxval - minval) + minval computed in dtype, as TF.
  Result<Tensor> Uniform(const TensorShape& shape, double minval = 0.0, double maxval = 1.0,
                         DType dtype = DType::kFloat32);
  // Integer dtypes (int32/int64/uint32/uint64): [minval, maxval), biased modulo as TF.
  Result<Tensor> UniformInt(const TensorShape& shape, int64_t minval, int64_t maxval,
                            DType dtype = DType::kInt32);
  Result<Tensor> UniformFullInt(const TensorShape& shape, DType dtype = DType::kUInt64);

  // int64 [2, count]: row 0 = uniform_full_int keys, row 1 = 0.
  Result<Tensor> MakeSeeds(int64_t count = 1);
  // `count` new generators with state [0, ..., key_i] (same algorithm and replica context).
  Result<std::vector<Generator>> Split(int64_t count = 1);

  // Replica context (strategy.run in TF): hash the key with this replica id on every draw.
  void set_replica_id(std::optional<int64_t> replica_id) { replica_id_ = replica_id; }
  std::optional<int64_t> replica_id() const { return replica_id_; }

 private:
  Generator(RngAlgorithm alg, Tensor state);
  static Result<Generator> Make(RngAlgorithm alg, std::span<const int64_t> state);
  // RngReadAndSkip: the (key, counter) of the old state; the counter moves by 256 * delta.
  KeyCounter ReadAndSkip(uint64_t delta);
  Result<Tensor> Draw(RandomSpec spec, const TensorShape& shape);

  RngAlgorithm alg_;
  Tensor state_;  // int64 [StateSize(alg_)]
  std::optional<int64_t> replica_id_;
  std::unique_ptr<std::mutex> mu_;
};

// The key replica `replica_id` draws with, given the stored (unhashed) key: TF's
// _preprocess_key, i.e. uniform_full_int(shape=[1], uint64) at counter [replica_id, 0].
uint64_t ReplicaKey(uint64_t key, RngAlgorithm alg, int64_t replica_id);
// For a job generator in state `job_state`: the (key, counter) replica `replica_id`'s next
// draw uses, and a state whose draws (with no further hashing) equal that replica's stream as
// long as the key is not reset.
Result<KeyCounter> ReplicaKeyCounter(const Tensor& job_state, RngAlgorithm alg, int64_t replica_id);
Result<Tensor> ReplicaState(const Tensor& job_state, RngAlgorithm alg, int64_t replica_id);

// The process-wide generator: created from a non-deterministic state on first use.
Generator& GetGlobalGenerator();
void SetGlobalGenerator(Generator generator);

}  // namespace troupe::random
