#include "kernels/kernel_util.h"

#include <algorithm>

#include "core/logging.h"

namespace troupe {
namespace kernels {

Status OpError(std::string_view op, std::string_view message) {
  return InvalidArgumentError(std::string(op) + ": " + std::string(message));
}

static std::string Quoted(std::string_view arg) { return "'" + std::string(arg) + "'"; }

Status CheckRank(std::string_view op, std::string_view arg, const TensorShape& shape, int rank) {
  if (shape.unknown_rank() || shape.rank() == rank) return Status::OK();
  return OpError(op, Quoted(arg) + " must be rank " + std::to_string(rank) + ", got shape " +
                         shape.ToString());
}

Status CheckRankAtLeast(std::string_view op, std::string_view arg, const TensorShape& shape,
                        int rank) {
  if (shape.unknown_rank() || shape.rank() >= rank) return Status::OK();
  return OpError(op, Quoted(arg) + " must have rank >= " + std::to_string(rank) + ", got shape " +
                         shape.ToString());
}

Status DTypeNotAllowed(std::string_view op, std::string_view arg, DType got,
                       std::initializer_list<DType> allowed) {
  std::string names;
  for (DType d : allowed) {
    if (!names.empty()) names += ", ";
    names += DTypeName(d);
  }
  return OpError(op, Quoted(arg) + " has dtype " + std::string(DTypeName(got)) +
                         " but must be one of {" + names + "}");
}

Status CheckSameDType(std::string_view op, std::string_view arg_a, DType a, std::string_view arg_b,
                      DType b) {
  if (a == b) return Status::OK();
  return OpError(op, Quoted(arg_a) + " has dtype " + std::string(DTypeName(a)) + " but " +
                         Quoted(arg_b) + " has dtype " + std::string(DTypeName(b)) +
                         "; they must match (insert a Cast)");
}

Status CheckDimsMatch(std::string_view op, std::string_view arg_a, const TensorShape& a, int dim_a,
                      std::string_view arg_b, const TensorShape& b, int dim_b,
                      std::string_view what) {
  if (a.unknown_rank() || b.unknown_rank()) return Status::OK();
  int64_t x = a.dim(dim_a), y = b.dim(dim_b);
  if (x < 0 || y < 0 || x == y) return Status::OK();
  return OpError(op, std::string(what) + " differ: " + Quoted(arg_a) + " " + a.ToString() +
                         " dim " + std::to_string(dim_a) + " is " + std::to_string(x) + " but " +
                         Quoted(arg_b) + " " + b.ToString() + " dim " + std::to_string(dim_b) +
                         " is " + std::to_string(y));
}

Status CheckSameShape(std::string_view op, std::string_view arg_a, const TensorShape& a,
                      std::string_view arg_b, const TensorShape& b) {
  if (a.IsCompatibleWith(b)) return Status::OK();
  return OpError(op, Quoted(arg_a) + " has shape " + a.ToString() + " but " + Quoted(arg_b) +
                         " has shape " + b.ToString() + "; they must be equal");
}

Status CheckNotEmpty(std::string_view op, std::string_view arg, const TensorShape& shape) {
  if (shape.unknown_rank()) return Status::OK();
  for (int64_t d : shape.dims()) {
    if (d == 0) {
      return OpError(op, Quoted(arg) + " is empty (shape " + shape.ToString() +
                             "); this op needs at least one element");
    }
  }
  return Status::OK();
}

Result<int> NormalizeAxis(std::string_view op, std::string_view arg, int64_t axis, int rank) {
  if (axis < -rank || axis >= rank) {
    return OpError(op, Quoted(arg) + " = " + std::to_string(axis) + " is out of range for rank " +
                           std::to_string(rank) + " (valid: [" + std::to_string(-rank) + ", " +
                           std::to_string(rank) + "))");
  }
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

SpecList InputSpecs(const KernelContext& ctx) {
  SpecList specs;
  specs.reserve(static_cast<size_t>(ctx.num_inputs()));
  for (const Tensor& t : ctx.inputs()) specs.push_back(TensorSpec::From(t));
  return specs;
}

std::vector<int64_t> ToInt64s(std::span<const int64_t> v) { return {v.begin(), v.end()}; }

std::string IntsToString(std::span<const int64_t> v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) s += ",";
    s += std::to_string(v[i]);
  }
  return s + "]";
}

void ParallelForBlocks(ThreadPool* pool, int64_t n, int64_t block,
                       const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  if (block >= n) {
    fn(0, n);
  } else if (pool == nullptr) {
    // Same blocks as the parallel path, so results never depend on having a pool.
    for (int64_t b = 0; b < n; b += block) fn(b, std::min(n, b + block));
  } else {
    pool->ParallelFor(n, block, fn);
  }
}

void Register(OpRegistry& registry, OpDef def, KernelFn kernel) {
  std::string name = def.name;
  Status s = registry.RegisterOp(std::move(def));
  TROUPE_CHECK(s.ok()) << s;
  s = registry.RegisterKernel(name, Device::Type::kCpu, std::move(kernel));
  TROUPE_CHECK(s.ok()) << s;
}

Result<std::vector<int64_t>> ReadIndexVector(std::string_view op, std::string_view arg,
                                             const Tensor& t) {
  if (t.rank() > 1) {
    return OpError(op,
                   Quoted(arg) + " must be a scalar or vector, got shape " + t.shape().ToString());
  }
  std::vector<int64_t> out(static_cast<size_t>(t.num_elements()));
  if (t.dtype() == DType::kInt32) {
    for (size_t i = 0; i < out.size(); ++i) out[i] = t.data<int32_t>()[i];
  } else if (t.dtype() == DType::kInt64) {
    for (size_t i = 0; i < out.size(); ++i) out[i] = t.data<int64_t>()[i];
  } else {
    return CheckDType(op, arg, t.dtype(), {DType::kInt32, DType::kInt64});
  }
  return out;
}

}  // namespace kernels
}  // namespace troupe
