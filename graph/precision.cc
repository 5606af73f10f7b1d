#include "graph/precision.h"

#include <unordered_set>

#include "kernels/op_registry.h"

namespace troupe {
namespace {

struct PolicyState {
  std::vector<DType> stack;
  std::unordered_set<int64_t> rounded;  // value ids known to hold rounded values
};

thread_local PolicyState g_policy;

// Ops that never round: conversions, the rounding itself, constants.
bool Untouched(std::string_view op) {
  static const std::unordered_set<std::string_view> kOps = {
      "Cast",     "RoundToPrecision", "Const",          "Placeholder",
      "Identity", "StopGradient",     "PreventGradient"};
  if (kOps.count(op) > 0) return true;
  return op.find("Random") != std::string_view::npos ||
         op.find("Stateless") != std::string_view::npos;
}

// Ops whose float32 outputs are exactly representable when their float32 inputs are (they
// move, select or compare values): their outputs need no rounding.
bool PreservesRounding(std::string_view op) {
  static const std::unordered_set<std::string_view> kOps = {
      "Reshape", "Transpose", "Squeeze",      "ExpandDims", "ConcatV2", "Concat",    "Pack",
      "Unpack",  "Slice",     "StridedSlice", "GatherV2",   "Gather",   "Tile",      "Pad",
      "Relu",    "Relu6",     "MaxPool",      "Neg",        "Abs",      "ZerosLike", "OnesLike",
      "Max",     "Min",       "Maximum",      "Minimum",    "Select",   "SelectV2",  "BroadcastTo",
      "Split",   "SplitV",    "Reverse",      "ReverseV2"};
  return kOps.count(op) > 0;
}

bool IsRounded(const Value& v) { return g_policy.rounded.count(v.id()) > 0; }

}  // namespace

Result<DType> ParsePrecisionPolicy(std::string_view name) {
  if (name == "float32") return DType::kFloat32;
  if (name == "mixed_bfloat16") return DType::kBFloat16;
  if (name == "mixed_float16") return DType::kHalf;
  return InvalidArgumentError("precision '" + std::string(name) +
                              "' is not one of float32, mixed_bfloat16, mixed_float16");
}

std::string_view PrecisionPolicyName(DType compute) {
  switch (compute) {
    case DType::kBFloat16:
      return "mixed_bfloat16";
    case DType::kHalf:
      return "mixed_float16";
    default:
      return "float32";
  }
}

PrecisionScope::PrecisionScope(DType compute) { g_policy.stack.push_back(compute); }

PrecisionScope::~PrecisionScope() {
  g_policy.stack.pop_back();
  if (g_policy.stack.empty()) g_policy.rounded.clear();
}

DType CurrentComputeDType() {
  return g_policy.stack.empty() ? DType::kFloat32 : g_policy.stack.back();
}

Value RoundTo(const Value& x, DType compute) {
  if (compute == DType::kFloat32 || !x.ok() || !x.defined() || x.dtype() != DType::kFloat32) {
    return x;
  }
  if (IsRounded(x)) return x;
  Value y = internal::ApplyRaw("RoundToPrecision", {x}, AttrMap{{"DstT", compute}}, {})[0];
  if (y.ok() && !g_policy.stack.empty()) g_policy.rounded.insert(y.id());
  return y;
}

namespace internal {

std::vector<Value> ApplyWithPolicy(std::string_view op, const std::vector<Value>& inputs,
                                   const AttrMap& attrs, std::string_view name, DType compute) {
  if (Untouched(op)) return ApplyRaw(op, inputs, attrs, name);
  Result<const OpDef*> def = OpRegistry::Global().LookupOp(op);
  if (!def.ok() || (*def)->stateful) return ApplyRaw(op, inputs, attrs, name);
  std::vector<Value> ins = inputs;
  for (Value& v : ins) v = RoundTo(v, compute);
  std::vector<Value> outs = ApplyRaw(op, ins, attrs, name);
  bool any_float = false;
  for (const Value& v : outs) any_float |= v.ok() && v.defined() && v.dtype() == DType::kFloat32;
  if (!any_float) return outs;
  const bool exact = PreservesRounding(op);
  for (Value& v : outs) {
    if (!v.ok() || !v.defined() || v.dtype() != DType::kFloat32) continue;
    if (exact) {
      g_policy.rounded.insert(v.id());
    } else {
      v = RoundTo(v, compute);
    }
  }
  return outs;
}

}  // namespace internal
}  // namespace troupe
