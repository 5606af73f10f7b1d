// Internal: the CUDA launchers of random_philox_kernels.cu and random_threefry_kernels.cu (and
// the copy in random_copy.cu), called by random_gpu.cc. Plain parameters only (no CUDA types);
// every launcher enqueues on `stream` (a cudaStream_t) and returns the launch error as a Status
// naming `op`.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/status.h"

namespace troupe::random::gpu::detail {

enum class Elem : int { kF32, kF64, kF16, kBF16, kI32, kI64, kU32, kU64 };
enum class Kind : int { kUniform, kNormal, kTruncatedNormal, kUniformInt, kUniformFullInt };

struct PhiloxArgs {
  uint32_t counter[4];
  uint32_t key[2];
};

// XLA's SplitShapeIntoHalves of the output shape: pre x d x post, h = ceil(d / 2).
struct SplitArgs {
  int64_t pre = 1, d = 1, h = 1, post = 1;
};

struct LaunchArgs {
  int device = 0;
  void* stream = nullptr;
  const char* op = "";
  Kind kind = Kind::kUniform;
  Elem elem = Elem::kF32;
  int64_t n = 0;
  void* out = nullptr;
  uint64_t lo_bits = 0, range_bits = 0;  // kUniformInt: minval and (maxval - minval), unsigned
  // Philox
  PhiloxArgs philox{};
  // ThreeFry
  uint64_t key = 0, counter = 0;
  SplitArgs split;               // of the output shape
  SplitArgs concat_split;        // normals: of the shape with the split dim replaced by (h, 2)
  float tn_alpha = 0, tn_z = 0;  // truncated normal (float32/bfloat16): XLA's CDF constants
  uint16_t tn_alpha_h = 0, tn_z_h = 0;  // float16 ones, as half bits
};

Status LaunchPhilox(const LaunchArgs& a);
Status LaunchThreeFry(const LaunchArgs& a);
Status LaunchPhiloxBlocks(int device, void* stream, const PhiloxArgs& base, uint64_t first,
                          int64_t n, uint32_t* out);
Status LaunchThreeFryWords(int device, void* stream, uint64_t key, uint64_t start, int64_t n,
                           uint32_t* out0, uint32_t* out1);

// Copies host memory to the device on `stream`; the host buffer may be freed on return.
Status CopyToDevice(int device, void* stream, void* dst, const void* src, size_t bytes,
                    const char* op);

}  // namespace troupe::random::gpu::detail
