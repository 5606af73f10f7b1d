#include "graph/keras/json_util.h"

#include <tuple>

namespace troupe::keras {

using nlohmann::json;

const json* Find(const json& j, const std::string& key) {
  if (!j.is_object()) return nullptr;
  auto it = j.find(key);
  return it == j.end() ? nullptr : &*it;
}

Result<const json*> RequireObject(const json& j, const std::string& key, const std::string& what) {
  const json* v = Find(j, key);
  if (v == nullptr || !v->is_object()) {
    return InvalidArgumentError(what + ": expected an object under \"" + key + "\"");
  }
  return v;
}

Result<DType> ParseDType(const std::string& name, const std::string& what) {
  if (name == "float32") return DType::kFloat32;
  if (name == "int32") return DType::kInt32;
  if (name == "int64") return DType::kInt64;
  return UnimplementedError(what + ": dtype '" + name +
                            "' is not supported (supported: float32, int32, int64)");
}

Result<std::string> DTypePolicyName(const nlohmann::json* dtype, const std::string& what) {
  if (dtype == nullptr || dtype->is_null()) return std::string();
  if (dtype->is_string()) return dtype->get<std::string>();
  const nlohmann::json* config = Find(*dtype, "config");
  const nlohmann::json* name = config != nullptr ? Find(*config, "name") : nullptr;
  if (name != nullptr && name->is_string()) return name->get<std::string>();
  return InvalidArgumentError(what +
                              ": \"dtype\" must be a policy name or a DTypePolicy "
                              "{\"config\": {\"name\": ...}}, got " +
                              dtype->dump().substr(0, 200));
}

bool TensorRef::operator<(const TensorRef& o) const {
  return std::tie(layer, node, tensor) < std::tie(o.layer, o.node, o.tensor);
}

std::string TensorRef::ToString() const {
  return "'" + layer + "' (call " + std::to_string(node) + ", output " + std::to_string(tensor) +
         ")";
}

Result<TensorRef> ParseTensorRef(const json& history, const std::string& where) {
  if (!history.is_array() || history.size() != 3 || !history[0].is_string() ||
      !history[1].is_number_integer() || !history[2].is_number_integer()) {
    return InvalidArgumentError(where + ": a tensor reference must be [layer, node, index], got " +
                                history.dump());
  }
  TensorRef ref{history[0].get<std::string>(), history[1].get<int64_t>(),
                history[2].get<int64_t>()};
  if (ref.tensor != 0) {
    return UnimplementedError(where + ": output " + std::to_string(ref.tensor) + " of layer '" +
                              ref.layer + "' (Troupe's layers have one output)");
  }
  return ref;
}

Status CollectRefs(const json& refs, const std::string& what, std::vector<TensorRef>* out) {
  if (refs.is_array() && refs.size() == 3 && refs[0].is_string()) {
    TROUPE_ASSIGN_OR_RETURN(TensorRef ref, ParseTensorRef(refs, what));
    out->push_back(std::move(ref));
    return Status::OK();
  }
  if (refs.is_array() || refs.is_object()) {
    for (const json& r : refs) TROUPE_RETURN_IF_ERROR(CollectRefs(r, what, out));
    return Status::OK();
  }
  return InvalidArgumentError(what + ": expected [layer, node, index] references, got " +
                              refs.dump());
}

std::string ShapeWithBatch(const TensorShape& shape, bool prepend_batch) {
  std::string s = "(";
  int first = 0;
  if (prepend_batch || shape.rank() > 0) {
    s += "None";
    first = prepend_batch ? 0 : 1;
  }
  for (int i = first; i < shape.rank(); ++i) s += ", " + std::to_string(shape.dim(i));
  return s + ")";
}

}  // namespace troupe::keras
