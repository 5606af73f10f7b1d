#include "input/example.h"

#include <cstring>

#include "core/dtype_traits.h"
#include "core/proto_wire.h"

namespace troupe::input {
namespace {

// ---- wire format writing ----
using proto::PutLengthDelimited;

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
        for (int64_t v : f.int64s) PutVarint64(&packed, static_cast<uint64_t>(v));
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
  explicit Reader(std::string_view data) : rest_(data) {}
  bool done() const { return rest_.empty(); }
  bool Varint(uint64_t* v) { return GetVarint64(&rest_, v); }
  // A field's key: its number and wire type.
  bool Tag(int* field, int* wire_type) {
    uint64_t tag;
    if (!Varint(&tag)) return false;
    *field = static_cast<int>(tag >> 3);
    *wire_type = static_cast<int>(tag & 7);
    return true;
  }
  bool Bytes(std::string_view* out) {
    uint64_t n;
    if (!Varint(&n) || n > rest_.size()) return false;
    *out = rest_.substr(0, static_cast<size_t>(n));
    rest_.remove_prefix(static_cast<size_t>(n));
    return true;
  }
  bool Fixed32(uint32_t* v) {
    if (rest_.size() < 4) return false;
    *v = DecodeFixed32(rest_.data());
    rest_.remove_prefix(4);
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
        return SkipBytes(8);
      case 2:
        return Bytes(&s);
      case 5:
        return SkipBytes(4);
      default:
        return false;
    }
  }

 private:
  bool SkipBytes(size_t n) {
    if (rest_.size() < n) return false;
    rest_.remove_prefix(n);
    return true;
  }

  std::string_view rest_;
};

Status Malformed(std::string_view what) {
  return InvalidArgumentError("could not parse a serialized tf.train.Example: malformed " +
                              std::string(what));
}

// Calls fn(payload) for every occurrence of length-delimited field 1 of `message` (the
// Example's `features`, a Features map's entries), skipping other fields. `message_name` and
// `field_name` name what was malformed.
template <typename Fn>
Status ForEachField1(std::string_view message, const char* message_name, const char* field_name,
                     Fn fn) {
  Reader r(message);
  while (!r.done()) {
    int field, wt;
    if (!r.Tag(&field, &wt)) return Malformed(std::string(message_name) + " tag");
    if (field != 1 || wt != 2) {
      if (!r.Skip(wt)) return Malformed(std::string(message_name) + " field");
      continue;
    }
    std::string_view payload;
    if (!r.Bytes(&payload)) return Malformed(field_name);
    TROUPE_RETURN_IF_ERROR(fn(payload));
  }
  return Status::OK();
}

// Reads one map<string, Feature> entry: the last key goes to `*key`; on_value(payload) runs for
// every value on the wire, in order.
template <typename OnValue>
Status ReadMapEntry(std::string_view entry, std::string_view* key, OnValue on_value) {
  Reader r(entry);
  while (!r.done()) {
    int field, wt;
    if (!r.Tag(&field, &wt)) return Malformed("map entry tag");
    std::string_view s;
    if (field == 1 && wt == 2) {
      if (!r.Bytes(key)) return Malformed("map key");
    } else if (field == 2 && wt == 2) {
      if (!r.Bytes(&s)) return Malformed("map value");
      TROUPE_RETURN_IF_ERROR(on_value(s));
    } else if (!r.Skip(wt)) {
      return Malformed("map entry field");
    }
  }
  return Status::OK();
}

// Calls fn(kind, list payload) for every list of a Feature message (a oneof: the last wins).
template <typename Fn>
Status ForEachFeatureList(std::string_view feature, Fn fn) {
  Reader r(feature);
  while (!r.done()) {
    int field, wt;
    if (!r.Tag(&field, &wt)) return Malformed("Feature tag");
    if (field >= 1 && field <= 3 && wt == 2) {
      std::string_view list;
      if (!r.Bytes(&list)) return Malformed("Feature list");
      TROUPE_RETURN_IF_ERROR(fn(field == 1   ? Feature::Kind::kBytes
                                : field == 2 ? Feature::Kind::kFloat
                                             : Feature::Kind::kInt64,
                                list));
    } else if (!r.Skip(wt)) {
      return Malformed("Feature field");
    }
  }
  return Status::OK();
}

// Decodes a BytesList / FloatList / Int64List payload (`kind` says which), handing the values
// to `sink` in wire order: sink.Bytes(string_view), sink.Floats(little-endian floats, count)
// (packed runs and single values alike), sink.Int64(value).
template <typename Sink>
Status DecodeList(std::string_view list, Feature::Kind kind, Sink& sink) {
  Reader r(list);
  while (!r.done()) {
    int field, wt;
    if (!r.Tag(&field, &wt)) return Malformed("list tag");
    if (field != 1) {
      if (!r.Skip(wt)) return Malformed("list field");
      continue;
    }
    if (kind == Feature::Kind::kBytes) {
      std::string_view v;
      if (wt != 2 || !r.Bytes(&v)) return Malformed("BytesList value");
      sink.Bytes(v);
    } else if (kind == Feature::Kind::kFloat) {
      if (wt == 2) {
        std::string_view v;
        if (!r.Bytes(&v) || v.size() % 4 != 0) return Malformed("packed FloatList");
        sink.Floats(v.data(), static_cast<int64_t>(v.size() / 4));
      } else if (wt == 5) {
        uint32_t bits;
        if (!r.Fixed32(&bits)) return Malformed("FloatList value");
        sink.Floats(reinterpret_cast<const char*>(&bits), 1);
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
          sink.Int64(static_cast<int64_t>(x));
        }
      } else if (wt == 0) {
        uint64_t x;
        if (!r.Varint(&x)) return Malformed("Int64List value");
        sink.Int64(static_cast<int64_t>(x));
      } else {
        return Malformed("Int64List wire type");
      }
    }
  }
  return Status::OK();
}

// Appends a list's values to a Feature.
struct FeatureSink {
  Feature* f;
  void Bytes(std::string_view v) { f->bytes.emplace_back(v); }
  void Floats(const char* le, int64_t k) {
    const size_t old = f->floats.size();
    f->floats.resize(old + static_cast<size_t>(k));
    std::memcpy(f->floats.data() + old, le, static_cast<size_t>(k) * 4);
  }
  void Int64(int64_t v) { f->int64s.push_back(v); }
};

Status ParseFeature(std::string_view payload, Feature* f) {
  return ForEachFeatureList(payload, [f](Feature::Kind kind, std::string_view list) {
    *f = Feature();
    f->kind = kind;
    FeatureSink sink{f};
    return DecodeList(list, kind, sink);
  });
}

Status ParseFeatures(std::string_view payload, Example* ex) {
  return ForEachField1(payload, "Features", "map entry", [ex](std::string_view entry) {
    std::string_view key;
    Feature value;
    TROUPE_RETURN_IF_ERROR(ReadMapEntry(entry, &key, [&value](std::string_view v) {
      value = Feature();
      return ParseFeature(v, &value);
    }));
    (*ex)[std::string(key)] = std::move(value);  // duplicate keys: last wins, as protobuf maps do
    return Status::OK();
  });
}

}  // namespace

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
  // Repeated `features` messages merge.
  TROUPE_RETURN_IF_ERROR(
      ForEachField1(serialized, "Example", "Example.features",
                    [&ex](std::string_view f) { return ParseFeatures(f, &ex); }));
  return ex;
}

namespace {

// The last oneof list of a Feature message, without copying its values.
struct FeatureRef {
  Feature::Kind kind = Feature::Kind::kNone;
  std::string_view list;  // BytesList / FloatList / Int64List payload
};

Status ScanFeature(std::string_view payload, FeatureRef* ref) {
  return ForEachFeatureList(payload, [ref](Feature::Kind kind, std::string_view list) {
    ref->kind = kind;
    ref->list = list;
    return Status::OK();
  });
}

// Writes a list's first `want` values straight into `t` and counts them all.
struct TensorSink {
  Tensor* t;
  int64_t want;
  int64_t n = 0;
  void Bytes(std::string_view v) {
    if (n < want) t->data<std::string>()[n].assign(v);
    ++n;
  }
  void Floats(const char* le, int64_t k) {
    if (n + k <= want) std::memcpy(t->data<float>() + n, le, static_cast<size_t>(k) * 4);
    n += k;
  }
  void Int64(int64_t v) {
    if (n < want) t->data<int64_t>()[n] = v;
    ++n;
  }
};

// Decodes a list straight into `t` (which holds `want` values); returns the count found.
Result<int64_t> FillFromList(const FeatureRef& ref, int64_t want, Tensor* t) {
  TensorSink sink{t, want};
  TROUPE_RETURN_IF_ERROR(DecodeList(ref.list, ref.kind, sink));
  return sink.n;
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
  auto scan_entry = [&](std::string_view entry) -> Status {
    std::string_view key, value;
    bool has_value = false;
    TROUPE_RETURN_IF_ERROR(ReadMapEntry(entry, &key, [&](std::string_view v) {
      value = v;
      has_value = true;
      return Status::OK();
    }));
    for (size_t i = 0; i < features.size(); ++i) {
      if (features[i].key == key) {
        refs[i] = FeatureRef();
        if (has_value) TROUPE_RETURN_IF_ERROR(ScanFeature(value, &refs[i]));
      }
    }
    return Status::OK();
  };
  TROUPE_RETURN_IF_ERROR(
      ForEachField1(serialized, "Example", "Example.features", [&](std::string_view feats) {
        return ForEachField1(feats, "Features", "map entry", scan_entry);
      }));
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
