// Small helpers for reading Keras configs with nlohmann::json without exceptions: lookups that
// return nullptr or an error naming the key, dtype names, and Keras' tensor references.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.h"
#include "core/tensor.h"
#include "core/tensor_shape.h"

namespace troupe::keras {

// `j[key]` when j is an object holding key, else nullptr.
const nlohmann::json* Find(const nlohmann::json& j, const std::string& key);
// `j[key]` as an object; InvalidArgument naming `what` and the key otherwise.
Result<const nlohmann::json*> RequireObject(const nlohmann::json& j, const std::string& key,
                                            const std::string& what);
// "float32", "int32", ... (a Keras dtype string, or a DTypePolicy's name).
Result<DType> ParseDType(const std::string& name, const std::string& what);
// A layer's or model's "dtype": a policy name string (Keras 3.0-3.3) or a DTypePolicy
// envelope {"class_name": "DTypePolicy", "config": {"name": ...}} (3.4+). "" when absent or
// null; InvalidArgument naming `what` for any other form.
Result<std::string> DTypePolicyName(const nlohmann::json* dtype, const std::string& what);

// A layer call's output, as keras_history = [layer, node index, tensor index] names it.
struct TensorRef {
  std::string layer;
  int64_t node = 0;
  int64_t tensor = 0;
  bool operator<(const TensorRef& o) const;
  std::string ToString() const;
};
Result<TensorRef> ParseTensorRef(const nlohmann::json& history, const std::string& where);
// input_layers / output_layers: ["name", 0, 0], a list of those, or a dict of those.
Status CollectRefs(const nlohmann::json& refs, const std::string& what,
                   std::vector<TensorRef>* out);

// "(None, 28, 28, 6)": `shape`'s first dimension is the batch, shown as None; with
// `prepend_batch`, `shape` has no batch dimension and None is put in front.
std::string ShapeWithBatch(const TensorShape& shape, bool prepend_batch = false);

}  // namespace troupe::keras
