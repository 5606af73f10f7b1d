// tf.train.Example without libprotobuf: the proto3 wire format of Example / Features / Feature /
// BytesList / FloatList / Int64List (tensorflow/core/example/{example,feature}.proto) written
// and parsed by hand. Writing packs float and int64 lists and orders map entries by key; parsing
// accepts packed and unpacked lists and any entry order, as a protobuf parser must.
// ParseSingleExample turns fixed-length features into tensors like tf.io.parse_single_example.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "core/tensor.h"

namespace troupe::input {

struct Feature {
  enum class Kind { kNone, kBytes, kFloat, kInt64 };
  Kind kind = Kind::kNone;
  std::vector<std::string> bytes;
  std::vector<float> floats;
  std::vector<int64_t> int64s;

  static Feature Bytes(std::vector<std::string> v) { return {Kind::kBytes, std::move(v), {}, {}}; }
  static Feature Floats(std::vector<float> v) { return {Kind::kFloat, {}, std::move(v), {}}; }
  static Feature Int64s(std::vector<int64_t> v) { return {Kind::kInt64, {}, {}, std::move(v)}; }
  bool operator==(const Feature& o) const {
    return kind == o.kind && bytes == o.bytes && floats == o.floats && int64s == o.int64s;
  }
};

using Example = std::map<std::string, Feature>;

// The Feature oneof's field name: "bytes_list", "float_list", "int64_list"; "empty" for kNone.
std::string KindName(Feature::Kind kind);

std::string SerializeExample(const Example& example);
Result<Example> ParseExample(std::string_view serialized);

// tf.io.FixedLenFeature: a feature with a known shape, dtype float32, int64 or string.
struct FixedLenFeature {
  std::string key;
  DType dtype = DType::kFloat32;
  TensorShape shape;
  std::optional<Tensor> default_value;  // used when the key is absent
};

// One tensor per feature, in the order given. Errors name the feature and what was wrong.
Result<std::vector<Tensor>> ParseSingleExample(std::string_view serialized,
                                               const std::vector<FixedLenFeature>& features);

// tf.io.decode_raw: reinterprets the bytes of a string tensor as little-endian `dtype` values;
// a scalar string becomes a vector, a [n] string tensor becomes [n, k] (all strings equal size).
Result<Tensor> DecodeRaw(const Tensor& bytes, DType dtype);

}  // namespace troupe::input
