// A vectorised TF BoxMullerFloat that is bit-equal to the scalar one on THIS machine's libm.
//
// TF's float normals are float(sin(v) * sqrt(-2 log u)) with glibc's logf and sincosf. Both
// inputs come from 23 random mantissa bits, so each function only ever sees 2^23 distinct
// arguments. We compute log/sin/cos in double precision with AVX2 (rounded to float, this is
// the correctly rounded value almost always) and, once per process, compare against glibc on
// all 2^23 arguments of each function; the arguments where glibc's float result differs (about
// 1-2%: glibc rounds its own double approximation) are recorded in bitmaps and recomputed with
// the scalar libm call. The result is exact by construction, on any glibc.
//
// The one-time table costs about as much as 2^24 scalar normals, so callers use it only for
// large draws (kMinValues).
#pragma once

#include <cstdint>
#include <vector>

#include "core/thread_pool.h"

namespace troupe::random {

class FastBoxMuller {
 public:
  static constexpr int64_t kMinValues = int64_t{1} << 23;

  // The process-wide instance, built on first use (in parallel on `pool`); null when the CPU
  // or the build lacks AVX2.
  static const FastBoxMuller* Get(ThreadPool* pool);

  // out[2i], out[2i+1] = BoxMullerFloat(w[2i], w[2i+1]) for i < n_pairs.
  void Pairs(const uint32_t* w, int64_t n_pairs, float* out) const;

  // Number of arguments patched with the scalar libm call (log, sin/cos), for tests and notes.
  int64_t log_exceptions() const { return log_exceptions_; }
  int64_t trig_exceptions() const { return trig_exceptions_; }

 private:
  FastBoxMuller() = default;
  void Build(ThreadPool* pool);

  std::vector<uint64_t> log_exception_bits_;   // bit k: logf(u(k)) needs the scalar call
  std::vector<uint64_t> trig_exception_bits_;  // bit j: sincosf(v(j)) needs the scalar call
  int64_t log_exceptions_ = 0;
  int64_t trig_exceptions_ = 0;
};

}  // namespace troupe::random
