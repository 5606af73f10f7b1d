// Helpers shared by the CPU kernel families: shape-function checks that produce errors naming
// the op, the argument and the shapes; dtype dispatch; size-only work partitioning; and one-call
// registration of an op with its CPU kernel. Light on includes (no Eigen) so every kernel file
// can use it.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.h"
#include "core/result.h"
#include "core/tensor.h"
#include "core/tensor_shape.h"
#include "core/tensor_spec.h"
#include "core/thread_pool.h"
#include "kernels/attr.h"
#include "kernels/op_registry.h"

namespace troupe {
namespace kernels {

using Specs = std::span<const TensorSpec>;
using SpecList = std::vector<TensorSpec>;

// "op: message" as InvalidArgument.
Status OpError(std::string_view op, std::string_view message);

// Argument checks used by shape functions. `arg` is the argument's name ("a", "filter").
Status CheckRank(std::string_view op, std::string_view arg, const TensorShape& shape, int rank);
Status CheckRankAtLeast(std::string_view op, std::string_view arg, const TensorShape& shape,
                        int rank);
// Inline: every elementwise kernel runs it per call, and the OK case is one comparison.
Status DTypeNotAllowed(std::string_view op, std::string_view arg, DType got,
                       std::initializer_list<DType> allowed);
inline Status CheckDType(std::string_view op, std::string_view arg, DType got,
                         std::initializer_list<DType> allowed) {
  for (DType d : allowed) {
    if (d == got) return Status::OK();
  }
  return DTypeNotAllowed(op, arg, got, allowed);
}
Status CheckSameDType(std::string_view op, std::string_view arg_a, DType a, std::string_view arg_b,
                      DType b);
// Known dims must be equal: "MatMul: inner dimensions differ: 'a' [2,3] dim 1 is 3 but 'b'
// [4,5] dim 0 is 4".
Status CheckDimsMatch(std::string_view op, std::string_view arg_a, const TensorShape& a, int dim_a,
                      std::string_view arg_b, const TensorShape& b, int dim_b,
                      std::string_view what);
// Shapes must be compatible (same rank, known dims equal).
Status CheckSameShape(std::string_view op, std::string_view arg_a, const TensorShape& a,
                      std::string_view arg_b, const TensorShape& b);
// Rejects empty tensors (any known dim 0) where an op cannot handle them.
Status CheckNotEmpty(std::string_view op, std::string_view arg, const TensorShape& shape);

// Normalizes axis in [-rank, rank) to [0, rank).
Result<int> NormalizeAxis(std::string_view op, std::string_view arg, int64_t axis, int rank);

// Known dims multiplied, or -1 if any operand is unknown.
inline int64_t MulDims(int64_t a, int64_t b) { return (a < 0 || b < 0) ? -1 : a * b; }

// Input specs of a running kernel, to reuse the op's shape function on concrete shapes.
SpecList InputSpecs(const KernelContext& ctx);

std::vector<int64_t> ToInt64s(std::span<const int64_t> v);
std::string IntsToString(std::span<const int64_t> v);  // "[1,2,2,1]"

// Block size for ParallelFor over `n` units costing about `cost_per_unit` scalar operations
// each. Depends only on sizes, never on the thread count, so per-block reductions are
// reproducible.
inline int64_t BlockSize(int64_t n, int64_t cost_per_unit) {
  // ~64K scalar operations per block: big enough to amortize scheduling, small enough to
  // balance two to a few dozen threads.
  constexpr int64_t kTargetCost = 1 << 16;
  const int64_t block = kTargetCost / (cost_per_unit > 1 ? cost_per_unit : 1);
  return block < 1 ? 1 : (block > n ? (n > 1 ? n : 1) : block);
}
// Runs fn over [0, n) in blocks of exactly `block` (the last may be shorter), in parallel when
// a pool is given and serially otherwise; the blocks are the same either way.
void ParallelForBlocks(ThreadPool* pool, int64_t n, int64_t block,
                       const std::function<void(int64_t, int64_t)>& fn);

// pool->ParallelFor with BlockSize(n, cost_per_unit) (serial when pool is null). Work that
// fits one block runs inline without wrapping fn in a std::function (small ops would
// otherwise pay a heap allocation per call); the blocks are the same either way.
template <typename Fn>
void ParallelFor(ThreadPool* pool, int64_t n, int64_t cost_per_unit, const Fn& fn) {
  if (n <= 0) return;
  const int64_t block = BlockSize(n, cost_per_unit);
  if (block >= n) {
    fn(int64_t{0}, n);
    return;
  }
  ParallelForBlocks(pool, n, block, fn);
}

// Registers `def` and its CPU kernel; aborts on duplicate registration (a programming error).
void Register(OpRegistry& registry, OpDef def, KernelFn kernel);

// Dispatch on float32/float64.
template <typename Fn>
bool DispatchFloat(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::kFloat32:
      fn(float{});
      return true;
    case DType::kFloat64:
      fn(double{});
      return true;
    default:
      return false;
  }
}

// Dispatch on float32/float64/int32/int64.
template <typename Fn>
bool DispatchReal(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::kFloat32:
      fn(float{});
      return true;
    case DType::kFloat64:
      fn(double{});
      return true;
    case DType::kInt32:
      fn(int32_t{});
      return true;
    case DType::kInt64:
      fn(int64_t{});
      return true;
    default:
      return false;
  }
}

// Reads an int32 or int64 rank-1 (or scalar) tensor as int64 values.
Result<std::vector<int64_t>> ReadIndexVector(std::string_view op, std::string_view arg,
                                             const Tensor& t);

}  // namespace kernels
}  // namespace troupe
