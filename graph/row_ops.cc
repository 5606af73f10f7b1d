#include "graph/row_ops.h"

#include <cstring>

#include "graph/grad_util.h"
#include "graph/graph_op.h"
#include "graph/ops.h"

namespace troupe::ops {
namespace {

Result<int64_t> IndexOf(const Tensor& index, int64_t rows, std::string_view op) {
  if (index.num_elements() != 1 ||
      (index.dtype() != DType::kInt32 && index.dtype() != DType::kInt64)) {
    return InvalidArgumentError(std::string(op) + ": index must be an int32/int64 scalar, got " +
                                TensorSpec::From(index).ToString());
  }
  const int64_t i =
      index.dtype() == DType::kInt32 ? index.scalar<int32_t>() : index.scalar<int64_t>();
  if (i < 0 || i >= rows) {
    return OutOfRangeError(std::string(op) + ": index " + std::to_string(i) +
                           " is out of range for dimension 0 of size " + std::to_string(rows));
  }
  return i;
}

void CopyRows(const Tensor& src, int64_t src_row, Tensor& dst, int64_t dst_row, int64_t row_elems) {
  if (src.dtype() == DType::kString) {
    for (int64_t k = 0; k < row_elems; ++k) {
      dst.data<std::string>()[dst_row * row_elems + k] =
          src.data<std::string>()[src_row * row_elems + k];
    }
    return;
  }
  const size_t bytes = DTypeSize(src.dtype()) * static_cast<size_t>(row_elems);
  std::memcpy(static_cast<char*>(dst.raw_data()) + bytes * static_cast<size_t>(dst_row),
              static_cast<const char*>(src.raw_data()) + bytes * static_cast<size_t>(src_row),
              bytes);
}

Status CheckIndexSpec(const TensorSpec& s, std::string_view op) {
  if ((s.dtype != DType::kInt32 && s.dtype != DType::kInt64) ||
      (!s.shape.unknown_rank() && s.shape.rank() != 0)) {
    return InvalidArgumentError(std::string(op) + ": index must be an int32/int64 scalar, got " +
                                s.ToString());
  }
  return Status::OK();
}

class RowAtOp final : public GraphOp {
 public:
  std::string_view type() const override { return "RowAt"; }
  Result<std::vector<TensorSpec>> InferSpecs(std::span<const TensorSpec> in) const override {
    TROUPE_RETURN_IF_ERROR(CheckIndexSpec(in[1], type()));
    if (in[0].shape.unknown_rank()) return std::vector<TensorSpec>{in[0]};
    if (in[0].shape.rank() < 1) {
      return InvalidArgumentError("RowAt: input must have rank >= 1, got " + in[0].ToString());
    }
    TensorShape row = in[0].shape;
    row.RemoveDim(0);
    return std::vector<TensorSpec>{{row, in[0].dtype, ""}};
  }
  Status Run(std::span<const Tensor> in, std::vector<Tensor>& out, const GraphOpContext&) override {
    const Tensor& x = in[0];
    if (x.rank() < 1) return InvalidArgumentError("RowAt: input must have rank >= 1");
    TROUPE_ASSIGN_OR_RETURN(int64_t i, IndexOf(in[1], x.dim(0), type()));
    TensorShape row = x.shape();
    row.RemoveDim(0);
    TROUPE_ASSIGN_OR_RETURN(Tensor y, Tensor::Allocate(x.dtype(), row));
    CopyRows(x, i, y, 0, y.num_elements());
    out.push_back(std::move(y));
    return Status::OK();
  }
  bool differentiable() const override { return true; }
  Status Gradient(const OpCall& c, const std::vector<Value>& dys,
                  std::vector<Value>* dxs) const override {
    *dxs = {RowUpdate(ZerosLike(c.inputs[0]), c.inputs[1], grad::OrZeros(dys[0], c.outputs[0])),
            Value()};
    return Status::OK();
  }
};

class RowUpdateOp final : public GraphOp {
 public:
  std::string_view type() const override { return "RowUpdate"; }
  Result<std::vector<TensorSpec>> InferSpecs(std::span<const TensorSpec> in) const override {
    TROUPE_RETURN_IF_ERROR(CheckIndexSpec(in[1], type()));
    if (in[0].dtype != in[2].dtype) {
      return InvalidArgumentError("RowUpdate: row " + in[2].ToString() + " does not match " +
                                  in[0].ToString());
    }
    if (!in[0].shape.unknown_rank() && !in[2].shape.unknown_rank()) {
      TensorShape row = in[0].shape;
      if (row.rank() < 1) return InvalidArgumentError("RowUpdate: input must have rank >= 1");
      row.RemoveDim(0);
      if (!row.IsCompatibleWith(in[2].shape)) {
        return InvalidArgumentError("RowUpdate: row " + in[2].ToString() +
                                    " does not fit a row of " + in[0].ToString());
      }
    }
    return std::vector<TensorSpec>{{in[0].shape, in[0].dtype, ""}};
  }
  Status Run(std::span<const Tensor> in, std::vector<Tensor>& out, const GraphOpContext&) override {
    const Tensor& x = in[0];
    const Tensor& row = in[2];
    if (x.rank() < 1 || x.num_elements() != x.dim(0) * row.num_elements()) {
      return InvalidArgumentError("RowUpdate: row " + TensorSpec::From(row).ToString() +
                                  " does not fit a row of " + TensorSpec::From(x).ToString());
    }
    TROUPE_ASSIGN_OR_RETURN(int64_t i, IndexOf(in[1], x.dim(0), type()));
    Tensor y = x.DeepCopy();
    CopyRows(row, 0, y, i, row.num_elements());
    out.push_back(std::move(y));
    return Status::OK();
  }
  bool differentiable() const override { return true; }
  Status Gradient(const OpCall& c, const std::vector<Value>& dys,
                  std::vector<Value>* dxs) const override {
    Value dy = grad::OrZeros(dys[0], c.outputs[0]);
    *dxs = {RowUpdate(dy, c.inputs[1], ZerosLike(c.inputs[2])), Value(), RowAt(dy, c.inputs[1])};
    return Status::OK();
  }
};

}  // namespace

Value RowAt(const Value& x, const Value& index) {
  return ApplyGraphOp(std::make_shared<RowAtOp>(), {x, index}, "RowAt")[0];
}

Value RowUpdate(const Value& x, const Value& index, const Value& row) {
  return ApplyGraphOp(std::make_shared<RowUpdateOp>(), {x, index, row}, "RowUpdate")[0];
}

Value Dim(const Value& x, int axis) {
  if (!x.ok()) return x;
  const TensorShape& s = x.shape();
  if (!s.unknown_rank() && axis < s.rank() && s.dim(axis) >= 0) {
    return ScalarOf(static_cast<double>(s.dim(axis)), DType::kInt32);
  }
  return StridedSlice(Shape(x, DType::kInt32), {axis}, {axis + 1}, {1}, 0, 0, 1);
}

}  // namespace troupe::ops
