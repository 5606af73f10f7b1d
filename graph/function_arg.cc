#include <cstring>

#include "graph/function.h"
#include "graph/function_internal.h"

namespace troupe {
namespace internal {

std::string PyShape(const TensorShape& shape) {
  if (shape.unknown_rank()) return "<unknown>";
  std::string out = "(";
  for (int i = 0; i < shape.rank(); ++i) {
    if (i) out += ", ";
    out += shape.dim(i) < 0 ? "None" : std::to_string(shape.dim(i));
  }
  if (shape.rank() == 1) out += ",";
  return out + ")";
}

std::string TensorDesc(const TensorSpec& s) {
  return std::string(DTypeName(s.dtype)) + " Tensor, shape=" + PyShape(s.shape);
}

bool IsSubtype(const TensorSpec& call, const TensorSpec& traced) {
  if (call.dtype != traced.dtype) return false;
  if (traced.shape.unknown_rank()) return true;
  if (call.shape.unknown_rank() || call.shape.rank() != traced.shape.rank()) return false;
  for (int i = 0; i < traced.shape.rank(); ++i) {
    if (traced.shape.dim(i) >= 0 && call.shape.dim(i) != traced.shape.dim(i)) return false;
  }
  return true;
}

Result<std::vector<Tensor>> TensorsOf(const std::vector<Value>& values) {
  std::vector<Tensor> tensors;
  tensors.reserve(values.size());
  for (const Value& v : values) {
    TROUPE_ASSIGN_OR_RETURN(Tensor t, v.tensor());
    tensors.push_back(std::move(t));
  }
  return tensors;
}

}  // namespace internal

using internal::TensorDesc;

// ---------------------------------------------------------------------------------- Arg

Arg Arg::Object(const void* identity, std::string type_name) {
  Arg a;
  a.kind_ = Kind::kObject;
  a.object_ = identity;
  a.str_ = std::move(type_name);
  return a;
}

Value Arg::value() const {
  switch (kind_) {
    case Kind::kTensor:
      return value_;
    case Kind::kVariable:
      return var_.Read();
    default:
      return Value::Error(InvalidArgumentError("argument (" + Describe() + ") is not a tensor"));
  }
}

TensorSpec Arg::spec() const {
  if (kind_ == Kind::kSpec) return spec_;
  if (kind_ == Kind::kTensor && value_.ok()) return value_.spec();
  return TensorSpec{TensorShape::UnknownRank(), DType::kInvalid, ""};
}

std::string Arg::Describe() const {
  switch (kind_) {
    case Kind::kNone:
      return "None";
    case Kind::kTensor:
    case Kind::kSpec:
      return TensorDesc(spec());
    case Kind::kInt:
      return "int value " + std::to_string(int_);
    case Kind::kFloat: {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.17g", float_);
      return std::string("float value ") + buf;
    }
    case Kind::kBool:
      return std::string("bool value ") + (int_ ? "True" : "False");
    case Kind::kString:
      return "str value '" + str_ + "'";
    case Kind::kVariable:
      return "Variable '" + (var_.valid() ? var_.name() : std::string("<invalid>")) + "'";
    case Kind::kObject:
      return str_ + " object";
    case Kind::kList: {
      std::string out = "list [";
      for (size_t i = 0; i < list_.size(); ++i) out += (i ? ", " : "") + list_[i].Describe();
      return out + "]";
    }
  }
  return "?";
}

bool Arg::SameStatic(const Arg& o) const {
  if (kind_ != o.kind_) return false;
  switch (kind_) {
    case Kind::kNone:
      return true;
    case Kind::kInt:
    case Kind::kBool:
      return int_ == o.int_;
    case Kind::kFloat:
      return std::memcmp(&float_, &o.float_, sizeof float_) == 0;
    case Kind::kString:
      return str_ == o.str_;
    case Kind::kVariable:
      return var_ == o.var_;
    case Kind::kObject:
      return object_ == o.object_;
    case Kind::kList:
      if (list_.size() != o.list_.size()) return false;
      for (size_t i = 0; i < list_.size(); ++i) {
        if (!list_[i].SameStatic(o.list_[i])) return false;
      }
      return true;
    case Kind::kTensor:
    case Kind::kSpec:
      return false;
  }
  return false;
}

const Arg& Args::operator[](std::string_view name) const {
  static const Arg* none = new Arg();
  if (names_ != nullptr) {
    for (size_t i = 0; i < names_->size() && i < args_.size(); ++i) {
      if ((*names_)[i] == name) return args_[i];
    }
  }
  return *none;
}

}  // namespace troupe
