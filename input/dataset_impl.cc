#include "input/dataset_impl.h"

#include <cstring>

namespace troupe::input::internal {

Status SaveInput(IteratorStateWriter* w, const std::string& prefix,
                 const std::unique_ptr<IteratorBase>& input) {
  if (!input) {
    w->WriteString(prefix, "input_impl_empty", "");
    return Status::OK();
  }
  return input->Save(w);
}

Status RestoreInput(const IteratorStateReader& r, const std::string& prefix,
                    const DatasetBase& input_dataset, std::unique_ptr<IteratorBase>* input) {
  if (r.Contains(prefix, "input_impl_empty")) {
    input->reset();
    return Status::OK();
  }
  if (!*input) {
    TROUPE_ASSIGN_OR_RETURN(*input, input_dataset.MakeIterator(prefix));
  }
  return (*input)->Restore(r);
}

namespace {
size_t ElementBytes(DType d) { return d == DType::kString ? sizeof(std::string) : DTypeSize(d); }

Status CopyRows(const Tensor& src, Tensor* dst, int64_t dst_row) {
  if (src.num_elements() == 0) return Status::OK();
  if (src.dtype() == DType::kString) {
    auto s = src.flat<std::string>();
    std::string* d = dst->data<std::string>() +
                     dst_row * (dst->dim(0) == 0 ? 0 : dst->num_elements() / dst->dim(0));
    for (size_t i = 0; i < s.size(); ++i) d[i] = s[i];
  } else {
    const int64_t row = dst->num_elements() / dst->dim(0);
    std::memcpy(static_cast<char*>(dst->raw_data()) + dst_row * row * DTypeSize(dst->dtype()),
                src.raw_data(), src.byte_size());
  }
  return Status::OK();
}
}  // namespace

Result<Element> StackElements(const std::vector<Element>& elements) {
  if (elements.empty()) return InternalError("StackElements of nothing");
  const size_t arity = elements[0].size();
  const int64_t n = static_cast<int64_t>(elements.size());
  Element out;
  out.reserve(arity);
  for (size_t c = 0; c < arity; ++c) {
    const Tensor& first = elements[0][c];
    for (int64_t i = 1; i < n; ++i) {
      const Tensor& t = elements[i][c];
      if (t.shape() != first.shape() || t.dtype() != first.dtype()) {
        return InvalidArgumentError(
            "Cannot batch tensors with different shapes in component " + std::to_string(c) +
            ". First element had shape " + first.shape().ToString() + " and element " +
            std::to_string(i) + " had shape " + t.shape().ToString() +
            " (use the same shape for every element, or batch after a map that makes them equal)");
      }
    }
    TensorShape shape = first.shape();
    shape.InsertDim(0, n);
    TROUPE_ASSIGN_OR_RETURN(Tensor batch, Tensor::Allocate(first.dtype(), shape));
    if (first.dtype() == DType::kString) {
      for (int64_t i = 0; i < n; ++i) TROUPE_RETURN_IF_ERROR(CopyRows(elements[i][c], &batch, i));
    } else {
      const size_t bytes = first.byte_size();
      char* dst = static_cast<char*>(batch.raw_data());
      for (int64_t i = 0; i < n; ++i) {
        if (bytes) std::memcpy(dst + i * bytes, elements[i][c].raw_data(), bytes);
      }
    }
    out.push_back(std::move(batch));
  }
  return out;
}

Result<Tensor> ConcatDim0(const std::vector<Tensor>& parts) {
  if (parts.empty()) return InternalError("ConcatDim0 of nothing");
  if (parts.size() == 1) return parts[0];
  TensorShape rest = parts[0].shape();
  rest.RemoveDim(0);
  int64_t rows = 0;
  for (const Tensor& p : parts) {
    TensorShape r = p.shape();
    if (r.rank() < 1) return InvalidArgumentError("cannot concatenate scalars along dim 0");
    r.RemoveDim(0);
    if (r != rest || p.dtype() != parts[0].dtype()) {
      return InvalidArgumentError("cannot concatenate " + p.shape().ToString() + " with " +
                                  parts[0].shape().ToString() + " along dim 0");
    }
    rows += p.dim(0);
  }
  TensorShape shape = rest;
  shape.InsertDim(0, rows);
  TROUPE_ASSIGN_OR_RETURN(Tensor out, Tensor::Allocate(parts[0].dtype(), shape));
  int64_t row = 0;
  for (const Tensor& p : parts) {
    if (p.dtype() == DType::kString) {
      TROUPE_RETURN_IF_ERROR(CopyRows(p, &out, row));
    } else if (p.byte_size()) {
      const int64_t row_elems = rows == 0 ? 0 : out.num_elements() / rows;
      std::memcpy(static_cast<char*>(out.raw_data()) + row * row_elems * ElementBytes(p.dtype()),
                  p.raw_data(), p.byte_size());
    }
    row += p.dim(0);
  }
  return out;
}

Result<Element> SliceElement(const Element& e, int64_t begin, int64_t end) {
  Element out;
  out.reserve(e.size());
  for (const Tensor& t : e) {
    TROUPE_ASSIGN_OR_RETURN(Tensor s, t.Slice(begin, end));
    out.push_back(std::move(s));
  }
  return out;
}

Status CheckElement(const Element& e, const ElementSpec& spec, std::string_view what) {
  if (e.size() != spec.size()) {
    return InvalidArgumentError(std::string(what) + " returned " + std::to_string(e.size()) +
                                " components, expected " + std::to_string(spec.size()) + " " +
                                SpecString(spec));
  }
  for (size_t i = 0; i < e.size(); ++i) {
    if (!spec[i].IsCompatibleWith(e[i])) {
      return InvalidArgumentError(std::string(what) + " component " + std::to_string(i) + " is " +
                                  std::string(DTypeName(e[i].dtype())) + e[i].shape().ToString() +
                                  ", expected " + spec[i].ToString());
    }
  }
  return Status::OK();
}

ElementSpec BatchSpec(const ElementSpec& in, int64_t batch_size, bool drop_remainder) {
  ElementSpec out = in;
  for (auto& s : out) {
    if (!s.shape.unknown_rank()) s.shape.InsertDim(0, drop_remainder ? batch_size : -1);
  }
  return out;
}

}  // namespace troupe::input::internal
