// Philox fills: words come from PhiloxBlocks in cache-sized chunks and are converted in place
// of TF's per-group loop. Chunks start on call boundaries, so Box-Muller pairs never straddle
// a chunk and any split across threads gives the same bits.
#include "kernels/random/philox_fill.h"

#include <algorithm>
#include <type_traits>

#include "kernels/random/fast_box_muller.h"
#include "kernels/random/philox_blocks.h"
#include "kernels/random/tf_bits.h"

namespace troupe::random {
namespace {

using namespace tf_bits;  // NOLINT: the conversions read better unqualified here.

constexpr int64_t kChunkBlocks = 512;         // 8 KiB of words per chunk (L1-resident)
constexpr int64_t kMinBlocksPerTask = 16384;  // 256 KiB of words: amortises scheduling

template <typename Fn>
void RunBlocks(int64_t n_blocks, ThreadPool* pool, const Fn& body) {
  if (pool == nullptr || n_blocks <= kMinBlocksPerTask) {
    body(0, n_blocks);
    return;
  }
  // Enough tasks for load balance; the split never changes the output.
  const int64_t tasks = 4 * (pool->num_threads() + 1);
  const int64_t grain = std::max(kMinBlocksPerTask, (n_blocks + tasks - 1) / tasks);
  pool->ParallelFor(n_blocks, grain, body);
}

// Calls fn(words, first_element, count) over the output, where `words` holds the Philox words
// of the calls covering those elements (elems_per_block elements per call).
template <typename Fn>
void ForEachChunk(const Philox4x32& gen, int64_t n, int elems_per_block, ThreadPool* pool,
                  const Fn& fn) {
  if (n <= 0) return;
  const int64_t n_blocks = (n + elems_per_block - 1) / elems_per_block;
  RunBlocks(n_blocks, pool, [&](int64_t b0, int64_t b1) {
    alignas(64) uint32_t words[kChunkBlocks * 4];
    for (int64_t cb = b0; cb < b1; cb += kChunkBlocks) {
      const int64_t nb = std::min(kChunkBlocks, b1 - cb);
      PhiloxBlocks(gen, static_cast<uint64_t>(cb), nb, words);
      const int64_t e0 = cb * elems_per_block;
      const int64_t e1 = std::min(n, (cb + nb) * elems_per_block);
      fn(words, e0, e1 - e0);
    }
  });
}

template <typename T>
constexpr bool kIs64 = sizeof(T) == 8;

}  // namespace

template <typename T>
void PhiloxUniform(const Philox4x32& gen, int64_t n, T* out, ThreadPool* pool) {
  if constexpr (std::is_same_v<T, float>) {
    ForEachChunk(gen, n, 4, pool, [out](const uint32_t* w, int64_t e0, int64_t count) {
      float* o = out + e0;
      for (int64_t i = 0; i < count; ++i) o[i] = Uint32ToFloat(w[i]);
    });
  } else if constexpr (std::is_same_v<T, double>) {
    ForEachChunk(gen, n, 2, pool, [out](const uint32_t* w, int64_t e0, int64_t count) {
      double* o = out + e0;
      for (int64_t i = 0; i < count; ++i) o[i] = Uint64ToDouble(w[2 * i], w[2 * i + 1]);
    });
  } else if constexpr (std::is_same_v<T, half>) {
    ForEachChunk(gen, n, 4, pool, [out](const uint32_t* w, int64_t e0, int64_t count) {
      for (int64_t i = 0; i < count; ++i) out[e0 + i] = Uint16ToHalf(w[i]);
    });
  } else {
    static_assert(std::is_same_v<T, bfloat16>);
    ForEachChunk(gen, n, 4, pool, [out](const uint32_t* w, int64_t e0, int64_t count) {
      for (int64_t i = 0; i < count; ++i) out[e0 + i] = Uint16ToBFloat16(w[i]);
    });
  }
}

template <typename T>
void PhiloxNormal(const Philox4x32& gen, int64_t n, T* out, ThreadPool* pool) {
  if constexpr (std::is_same_v<T, double>) {
    ForEachChunk(gen, n, 2, pool, [out](const uint32_t* w, int64_t e0, int64_t count) {
      for (int64_t i = 0; i < count; i += 2) {
        double d[2];
        BoxMullerDouble(w[2 * i], w[2 * i + 1], w[2 * i + 2], w[2 * i + 3], &d[0], &d[1]);
        out[e0 + i] = d[0];
        if (i + 1 < count) out[e0 + i + 1] = d[1];
      }
    });
  } else {
    const FastBoxMuller* fast = n >= FastBoxMuller::kMinValues ? FastBoxMuller::Get(pool) : nullptr;
    ForEachChunk(gen, n, 4, pool, [out, fast](const uint32_t* w, int64_t e0, int64_t count) {
      int64_t done = 0;
      if (fast != nullptr) {
        const int64_t pairs = count / 2;
        if constexpr (std::is_same_v<T, float>) {
          fast->Pairs(w, pairs, out + e0);
        } else {
          alignas(64) float f[kChunkBlocks * 4];
          fast->Pairs(w, pairs, f);
          for (int64_t i = 0; i < 2 * pairs; ++i) out[e0 + i] = static_cast<T>(f[i]);
        }
        done = 2 * pairs;
      }
      for (int64_t i = done; i < count; i += 2) {
        float f[2];
        BoxMullerFloat(w[i], w[i + 1], &f[0], &f[1]);
        out[e0 + i] = static_cast<T>(f[0]);
        if (i + 1 < count) out[e0 + i + 1] = static_cast<T>(f[1]);
      }
    });
  }
}

template <typename T>
void PhiloxTruncatedNormal(const Philox4x32& gen, int64_t n, T* out, ThreadPool* pool) {
  if (n <= 0) return;
  constexpr int kGroup = kIs64<T> ? 2 : 4;
  constexpr uint64_t kSkipPerGroup = kGroup * 256 / 4;
  const int64_t n_groups = (n + kGroup - 1) / kGroup;
  auto body = [&](int64_t g0, int64_t g1) {
    for (int64_t g = g0; g < g1; ++g) {
      Philox4x32 p = gen;
      p.Skip(static_cast<uint64_t>(g) * kSkipPerGroup);
      // TF's SingleSampleAdapter: hand out the words of successive calls one at a time.
      Philox4x32::Block block{};
      int used = 4;
      auto next = [&]() -> uint32_t {
        if (used == 4) {
          block = p();
          used = 0;
        }
        return block[static_cast<size_t>(used++)];
      };
      const int want = static_cast<int>(std::min<int64_t>(kGroup, n - g * kGroup));
      T* o = out + g * kGroup;
      int index = 0;
      // TF computes the whole group even when the tail needs fewer; stopping early reads the
      // same words for the elements kept.
      while (index < want) {
        if constexpr (kIs64<T>) {
          const uint32_t x0 = next(), x1 = next(), x2 = next(), x3 = next();
          double d[2];
          BoxMullerDouble(x0, x1, x2, x3, &d[0], &d[1]);
          for (int k = 0; k < 2 && index < want; ++k) {
            if (std::abs(d[k]) < 2.0) o[index++] = d[k];
          }
        } else {
          const uint32_t x0 = next(), x1 = next();
          float f[2];
          BoxMullerFloat(x0, x1, &f[0], &f[1]);
          for (int k = 0; k < 2 && index < want; ++k) {
            if (std::abs(f[k]) < 2.0f) o[index++] = static_cast<T>(f[k]);
          }
        }
      }
    }
  };
  // A group costs about one Philox call plus one Box-Muller pair per two values.
  if (pool == nullptr || n_groups <= 4096) {
    body(0, n_groups);
  } else {
    const int64_t tasks = 4 * (pool->num_threads() + 1);
    pool->ParallelFor(n_groups, std::max<int64_t>(4096, (n_groups + tasks - 1) / tasks), body);
  }
}

template <typename T>
void PhiloxUniformInt(const Philox4x32& gen, int64_t n, T lo, T hi, T* out, ThreadPool* pool) {
  using U = std::make_unsigned_t<T>;
  const U range = static_cast<U>(static_cast<U>(hi) - static_cast<U>(lo));
  const U ulo = static_cast<U>(lo);
  if constexpr (kIs64<T>) {
    ForEachChunk(gen, n, 2, pool, [=](const uint32_t* w, int64_t e0, int64_t count) {
      for (int64_t i = 0; i < count; ++i) {
        out[e0 + i] = static_cast<T>(ulo + Join64(w[2 * i], w[2 * i + 1]) % range);
      }
    });
  } else {
    ForEachChunk(gen, n, 4, pool, [=](const uint32_t* w, int64_t e0, int64_t count) {
      for (int64_t i = 0; i < count; ++i) out[e0 + i] = static_cast<T>(ulo + w[i] % range);
    });
  }
}

template <typename T>
void PhiloxUniformFullInt(const Philox4x32& gen, int64_t n, T* out, ThreadPool* pool) {
  if constexpr (kIs64<T>) {
    ForEachChunk(gen, n, 2, pool, [out](const uint32_t* w, int64_t e0, int64_t count) {
      for (int64_t i = 0; i < count; ++i) {
        out[e0 + i] = static_cast<T>(Join64(w[2 * i], w[2 * i + 1]));
      }
    });
  } else {
    ForEachChunk(gen, n, 4, pool, [out](const uint32_t* w, int64_t e0, int64_t count) {
      for (int64_t i = 0; i < count; ++i) out[e0 + i] = static_cast<T>(w[i]);
    });
  }
}

#define TROUPE_INSTANTIATE_FLOAT(T)                                            \
  template void PhiloxUniform<T>(const Philox4x32&, int64_t, T*, ThreadPool*); \
  template void PhiloxNormal<T>(const Philox4x32&, int64_t, T*, ThreadPool*);  \
  template void PhiloxTruncatedNormal<T>(const Philox4x32&, int64_t, T*, ThreadPool*);
TROUPE_INSTANTIATE_FLOAT(float)
TROUPE_INSTANTIATE_FLOAT(double)
TROUPE_INSTANTIATE_FLOAT(half)
TROUPE_INSTANTIATE_FLOAT(bfloat16)
#undef TROUPE_INSTANTIATE_FLOAT

#define TROUPE_INSTANTIATE_INT(T)                                                       \
  template void PhiloxUniformInt<T>(const Philox4x32&, int64_t, T, T, T*, ThreadPool*); \
  template void PhiloxUniformFullInt<T>(const Philox4x32&, int64_t, T*, ThreadPool*);
TROUPE_INSTANTIATE_INT(int32_t)
TROUPE_INSTANTIATE_INT(int64_t)
TROUPE_INSTANTIATE_INT(uint32_t)
TROUPE_INSTANTIATE_INT(uint64_t)
#undef TROUPE_INSTANTIATE_INT

}  // namespace troupe::random
