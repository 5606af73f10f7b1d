#include "input/example.h"

#include <cstring>

#include "core/dtype_traits.h"

namespace troupe::input {
namespace {

// ---- wire format writing ----
void PutVarint(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}
void PutTag(std::string* out, int field, int wire_type) {
  PutVarint(out, (static_cast<uint64_t>(field) << 3) | static_cast<uint64_t>(wire_type));
}
void PutLengthDelimited(std::string* out, int field, std::string_view payload) {
  PutTag(out, field, 2);
  PutVarint(out, payload.size());
  out->append(payload);
}

std::string SerializeFeature(const Feature& f) {
  std::string list;
  int field = 0;
  switch (f.kind) {
    case Feature::Kind::kNone:
      return "";
    case Feature::Kind::kBytes:
      field = 1;
      for (const auto& b : f.bytes) PutLengthDelimited(&list, 1, b);
      break;
    case Feature::Kind::kFloat: {
      field = 2;
      if (!f.floats.empty()) {
        std::string packed(f.floats.size() * 4, '\0');
        std::memcpy(packed.data(), f.floats.data(), packed.size());  // little-endian host
        PutLengthDelimited(&list, 1, packed);
      }
      break;
    }
    case Feature::Kind::kInt64: {
      field = 3;
      if (!f.int64s.empty()) {
        std::string packed;
        for (int64_t v : f.int64s) PutVarint(&packed, static_cast<uint64_t>(v));
        PutLengthDelimited(&list, 1, packed);
      }
      break;
    }
  }
  std::string out;
  PutLengthDelimited(&out, field, list);
  return out;
}

// ---- wire format reading ----
class Reader {
 public:
  explicit Reader(std::string_view data) : p_(data.data()), end_(data.data() + data.size()) {}
  bool done() const { return p_ == end_; }
  bool Varint(uint64_t* v) {
    uint64_t result = 0;
    for (int shift = 0; shift < 64 && p_ < end_; shift += 7) {
      uint8_t b = static_cast<uint8_t>(*p_++);
      result |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) {
        *v = result;
        return true;
      }
    }
    return false;
  }
  bool Bytes(std::string_view* out) {
    uint64_t n;
    if (!Varint(&n) || n > static_cast<uint64_t>(end_ - p_)) return false;
    *out = std::string_view(p_, static_cast<size_t>(n));
    p_ += n;
    return true;
  }
  bool Fixed32(uint32_t* v) {
    if (end_ - p_ < 4) return false;
    std::memcpy(v, p_, 4);
    p_ += 4;
    return true;
  }
  // Skips a field of `wire_type` we do not know.
  bool Skip(int wire_type) {
    uint64_t v;
    std::string_view s;
    switch (wire_type) {
      case 0:
        return Varint(&v);
      case 1:
        if (end_ - p_ < 8) return false;
        p_ += 8;
        return true;
      case 2:
        return Bytes(&s);
      case 5:
        if (end_ - p_ < 4) return false;
        p_ += 4;
        return true;
      default:
        return false;
    }
  }

 private:
  const char* p_;
  const char* end_;
};

Status Malformed(std::string_view what) {
  return InvalidArgumentError("could not parse a serialized tf.train.Example: malformed " +
                              std::string(what));
}

Status ParseList(std::string_view payload, int kind_field, Feature* f) {
  Reader r(payload);
  while (!r.done()) {
    uint64_t tag;
    if (!r.Varint(&tag)) return Malformed("list tag");
    int field = static_cast<int>(tag >> 3), wt = static_cast<int>(tag & 7);
    if (field != 1) {
      if (!r.Skip(wt)) return Malformed("list field");
      continue;
    }
    if (kind_field == 1) {
      std::string_view s;
      if (wt != 2 || !r.Bytes(&s)) return Malformed("BytesList value");
      f->bytes.emplace_back(s);
    } else if (kind_field == 2) {
      if (wt == 2) {
        std::string_view s;
        if (!r.Bytes(&s) || s.size() % 4 != 0) return Malformed("packed FloatList");
        size_t n = s.size() / 4;
        size_t old = f->floats.size();
        f->floats.resize(old + n);
        std::memcpy(f->floats.data() + old, s.data(), s.size());
      } else if (wt == 5) {
        uint32_t bits;
        if (!r.Fixed32(&bits)) return Malformed("FloatList value");
        float v;
        std::memcpy(&v, &bits, 4);
        f->floats.push_back(v);
      } else {
        return Malformed("FloatList wire type");
      }
    } else {
      if (wt == 2) {
        std::string_view s;
        if (!r.Bytes(&s)) return Malformed("packed Int64List");
        Reader pr(s);
        while (!pr.done()) {
          uint64_t v;
          if (!pr.Varint(&v)) return Malformed("Int64List varint");
          f->int64s.push_back(static_cast<int64_t>(v));
        }
      } else if (wt == 0) {
        uint64_t v;
        if (!r.Varint(&v)) return Malformed("Int64List value");
        f->int64s.push_back(static_cast<int64_t>(v));
      } else {
        return Malformed("Int64List wire type");
      }
    }
  }
  return Status::OK();
}

Status ParseFeature(std::string_view payload, Feature* f) {
  Reader r(payload);
  while (!r.done()) {
    uint64_t tag;
    if (!r.Varint(&tag)) return Malformed("Feature tag");
    int field = static_cast<int>(tag >> 3), wt = static_cast<int>(tag & 7);
    if (field >= 1 && field <= 3 && wt == 2) {
      std::string_view list;
      if (!r.Bytes(&list)) return Malformed("Feature list");
      // A oneof: the last one on the wire wins.
      *f = Feature();
      f->kind = field == 1 ? Feature::Kind::kBytes
                           : (field == 2 ? Feature::Kind::kFloat : Feature::Kind::kInt64);
      TROUPE_RETURN_IF_ERROR(ParseList(list, field, f));
    } else if (!r.Skip(wt)) {
      return Malformed("Feature field");
    }
  }
  return Status::OK();
}

Status ParseFeatures(std::string_view payload, Example* ex) {
  Reader r(payload);
  while (!r.done()) {
    uint64_t tag;
    if (!r.Varint(&tag)) return Malformed("Features tag");
    int field = static_cast<int>(tag >> 3), wt = static_cast<int>(tag & 7);
    if (field != 1 || wt != 2) {
      if (!r.Skip(wt)) return Malformed("Features field");
      continue;
    }
    std::string_view entry;
    if (!r.Bytes(&entry)) return Malformed("map entry");
    Reader er(entry);
    std::string key;
    Feature value;
    while (!er.done()) {
      uint64_t etag;
      if (!er.Varint(&etag)) return Malformed("map entry tag");
      int ef = static_cast<int>(etag >> 3), ewt = static_cast<int>(etag & 7);
      std::string_view s;
      if (ef == 1 && ewt == 2) {
        if (!er.Bytes(&s)) return Malformed("map key");
        key.assign(s);
      } else if (ef == 2 && ewt == 2) {
        if (!er.Bytes(&s)) return Malformed("map value");
        value = Feature();
        TROUPE_RETURN_IF_ERROR(ParseFeature(s, &value));
      } else if (!er.Skip(ewt)) {
        return Malformed("map entry field");
      }
    }
    (*ex)[key] = std::move(value);  // duplicate keys: last wins, as protobuf maps do
  }
  return Status::OK();
}

std::string KindName(Feature::Kind k) {
  switch (k) {
    case Feature::Kind::kBytes:
      return "bytes_list";
    case Feature::Kind::kFloat:
      return "float_list";
    case Feature::Kind::kInt64:
      return "int64_list";
    default:
      return "empty";
  }
}

}  // namespace

std::string SerializeExample(const Example& example) {
  std::string features;
  for (const auto& [key, feature] : example) {
    std::string entry;
    PutLengthDelimited(&entry, 1, key);
    PutLengthDelimited(&entry, 2, SerializeFeature(feature));
    PutLengthDelimited(&features, 1, entry);
  }
  std::string out;
  PutLengthDelimited(&out, 1, features);
  return out;
}

Result<Example> ParseExample(std::string_view serialized) {
  Example ex;
  Reader r(serialized);
  while (!r.done()) {
    uint64_t tag;
    if (!r.Varint(&tag)) return Malformed("Example tag");
    int field = static_cast<int>(tag >> 3), wt = static_cast<int>(tag & 7);
    if (field == 1 && wt == 2) {
      std::string_view features;
      if (!r.Bytes(&features)) return Malformed("Example.features");
      TROUPE_RETURN_IF_ERROR(ParseFeatures(features, &ex));  // repeated messages merge
    } else if (!r.Skip(wt)) {
      return Malformed("Example field");
    }
  }
  return ex;
}

namespace {

// The last oneof list of a Feature message, without copying its values.
struct FeatureRef {
  Feature::Kind kind = Feature::Kind::kNone;
  std::string_view list;  // BytesList / FloatList / Int64List payload
};

Status ScanFeature(std::string_view payload, FeatureRef* ref) {
  Reader r(payload);
  while (!r.done()) {
    uint64_t tag;
    if (!r.Varint(&tag)) return Malformed("Feature tag");
    int field = static_cast<int>(tag >> 3), wt = static_cast<int>(tag & 7);
    if (field >= 1 && field <= 3 && wt == 2) {
      if (!r.Bytes(&ref->list)) return Malformed("Feature list");
      ref->kind = field == 1 ? Feature::Kind::kBytes
                             : (field == 2 ? Feature::Kind::kFloat : Feature::Kind::kInt64);
    } else if (!r.Skip(wt)) {
      return Malformed("Feature field");
    }
  }
  return Status::OK();
}

// Decodes a list straight into `t` (which holds `want` values); returns the count found.
Result<int64_t> FillFromList(const FeatureRef& ref, int64_t want, Tensor* t) {
  Reader r(ref.list);
  int64_t n = 0;
  while (!r.done()) {
    uint64_t tag;
    if (!r.Varint(&tag)) return Malformed("list tag");
    int field = static_cast<int>(tag >> 3), wt = static_cast<int>(tag & 7);
    if (field != 1) {
      if (!r.Skip(wt)) return Malformed("list field");
      continue;
    }
    if (ref.kind == Feature::Kind::kBytes) {
      std::string_view v;
      if (wt != 2 || !r.Bytes(&v)) return Malformed("BytesList value");
      if (n < want) t->data<std::string>()[n].assign(v);
      ++n;
    } else if (ref.kind == Feature::Kind::kFloat) {
      if (wt == 2) {
        std::string_view v;
        if (!r.Bytes(&v) || v.size() % 4 != 0) return Malformed("packed FloatList");
        const int64_t k = static_cast<int64_t>(v.size() / 4);
        if (n + k <= want) std::memcpy(t->data<float>() + n, v.data(), v.size());
        n += k;
      } else if (wt == 5) {
        uint32_t bits;
        if (!r.Fixed32(&bits)) return Malformed("FloatList value");
        if (n < want) std::memcpy(t->data<float>() + n, &bits, 4);
        ++n;
      } else {
        return Malformed("FloatList wire type");
      }
    } else {
      if (wt == 2) {
        std::string_view v;
        if (!r.Bytes(&v)) return Malformed("packed Int64List");
        Reader pr(v);
        while (!pr.done()) {
          uint64_t x;
          if (!pr.Varint(&x)) return Malformed("Int64List varint");
          if (n < want) t->data<int64_t>()[n] = static_cast<int64_t>(x);
          ++n;
        }
      } else if (wt == 0) {
        uint64_t x;
        if (!r.Varint(&x)) return Malformed("Int64List value");
        if (n < want) t->data<int64_t>()[n] = static_cast<int64_t>(x);
        ++n;
      } else {
        return Malformed("Int64List wire type");
      }
    }
  }
  return n;
}

Feature::Kind KindFor(DType d) {
  switch (d) {
    case DType::kFloat32:
      return Feature::Kind::kFloat;
    case DType::kInt64:
      return Feature::Kind::kInt64;
    case DType::kString:
      return Feature::Kind::kBytes;
    default:
      return Feature::Kind::kNone;
  }
}

}  // namespace

// Scans the wire format once and decodes only the requested features, straight into their
// tensors (no intermediate Example map).
Result<std::vector<Tensor>> ParseSingleExample(std::string_view serialized,
                                               const std::vector<FixedLenFeature>& features) {
  std::vector<FeatureRef> refs(features.size());
  for (const FixedLenFeature& spec : features) {
    if (!spec.shape.IsFullyDefined()) {
      return InvalidArgumentError("FixedLenFeature '" + spec.key +
                                  "' needs a fully defined shape, got " + spec.shape.ToString());
    }
    if (KindFor(spec.dtype) == Feature::Kind::kNone) {
      return InvalidArgumentError("FixedLenFeature '" + spec.key + "' has dtype " +
                                  std::string(DTypeName(spec.dtype)) +
                                  "; Example features are float32, int64 or string");
    }
  }
  Reader r(serialized);
  while (!r.done()) {
    uint64_t tag;
    if (!r.Varint(&tag)) return Malformed("Example tag");
    int field = static_cast<int>(tag >> 3), wt = static_cast<int>(tag & 7);
    if (field != 1 || wt != 2) {
      if (!r.Skip(wt)) return Malformed("Example field");
      continue;
    }
    std::string_view feats;
    if (!r.Bytes(&feats)) return Malformed("Example.features");
    Reader fr(feats);
    while (!fr.done()) {
      if (!fr.Varint(&tag)) return Malformed("Features tag");
      field = static_cast<int>(tag >> 3);
      wt = static_cast<int>(tag & 7);
      if (field != 1 || wt != 2) {
        if (!fr.Skip(wt)) return Malformed("Features field");
        continue;
      }
      std::string_view entry;
      if (!fr.Bytes(&entry)) return Malformed("map entry");
      Reader er(entry);
      std::string_view key, value;
      bool has_value = false;
      while (!er.done()) {
        if (!er.Varint(&tag)) return Malformed("map entry tag");
        int ef = static_cast<int>(tag >> 3), ewt = static_cast<int>(tag & 7);
        if (ef == 1 && ewt == 2) {
          if (!er.Bytes(&key)) return Malformed("map key");
        } else if (ef == 2 && ewt == 2) {
          if (!er.Bytes(&value)) return Malformed("map value");
          has_value = true;
        } else if (!er.Skip(ewt)) {
          return Malformed("map entry field");
        }
      }
      for (size_t i = 0; i < features.size(); ++i) {
        if (features[i].key == key) {
          refs[i] = FeatureRef();
          if (has_value) TROUPE_RETURN_IF_ERROR(ScanFeature(value, &refs[i]));
        }
      }
    }
  }
  std::vector<Tensor> out;
  out.reserve(features.size());
  for (size_t i = 0; i < features.size(); ++i) {
    const FixedLenFeature& spec = features[i];
    const FeatureRef& ref = refs[i];
    if (ref.kind == Feature::Kind::kNone) {
      if (spec.default_value) {
        out.push_back(*spec.default_value);
        continue;
      }
      return InvalidArgumentError("Feature: " + spec.key +
                                  " (data type: " + std::string(DTypeName(spec.dtype)) +
                                  ") is required but could not be found.");
    }
    const int64_t want = spec.shape.num_elements();
    TROUPE_ASSIGN_OR_RETURN(Tensor t, Tensor::Allocate(spec.dtype, spec.shape));
    int64_t got = 0;
    if (ref.kind == KindFor(spec.dtype)) {
      TROUPE_ASSIGN_OR_RETURN(got, FillFromList(ref, want, &t));
    }
    if (ref.kind != KindFor(spec.dtype) || got != want) {
      return InvalidArgumentError(
          "Key: " + spec.key + ". Can't parse serialized Example: feature has " +
          KindName(ref.kind) + " with " + std::to_string(got) + " values, expected " +
          std::string(DTypeName(spec.dtype)) + " of shape " + spec.shape.ToString() + " (" +
          std::to_string(want) + " values)");
    }
    out.push_back(std::move(t));
  }
  return out;
}

Result<Tensor> DecodeRaw(const Tensor& bytes, DType dtype) {
  if (bytes.dtype() != DType::kString) {
    return InvalidArgumentError("DecodeRaw needs a string tensor, got " +
                                std::string(DTypeName(bytes.dtype())));
  }
  const size_t width = DTypeSize(dtype);
  if (width == 0) {
    return InvalidArgumentError("DecodeRaw: cannot decode to " + std::string(DTypeName(dtype)));
  }
  auto strings = bytes.flat<std::string>();
  size_t each = strings.empty() ? 0 : strings[0].size();
  for (size_t i = 0; i < strings.size(); ++i) {
    if (strings[i].size() != each) {
      return InvalidArgumentError(
          "DecodeRaw: input to DecodeRaw has length " + std::to_string(strings[i].size()) +
          " that does not match the length of the first input " + std::to_string(each));
    }
  }
  if (each % width != 0) {
    return InvalidArgumentError("DecodeRaw: input size " + std::to_string(each) +
                                " is not a multiple of " + std::to_string(width) + " (" +
                                std::string(DTypeName(dtype)) + ")");
  }
  TensorShape shape = bytes.shape();
  shape.AddDim(static_cast<int64_t>(each / width));
  TROUPE_ASSIGN_OR_RETURN(Tensor out, Tensor::Allocate(dtype, shape));
  char* dst = static_cast<char*>(out.raw_data());
  for (size_t i = 0; i < strings.size(); ++i) std::memcpy(dst + i * each, strings[i].data(), each);
  return out;
}

}  // namespace troupe::input
