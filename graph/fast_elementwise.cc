#include "graph/fast_elementwise.h"

#include <cstdlib>
#include <cstring>
#include <string_view>

namespace troupe::internal {
namespace {

template <typename T, typename Op>
void Binary(const void* a, int64_t ai, const void* b, int64_t bi, void* out, int64_t n) {
  const T* x = static_cast<const T*>(a);
  const T* y = static_cast<const T*>(b);
  T* z = static_cast<T*>(out);
  Op op;
  if (ai == 1 && bi == 1) {
    for (int64_t i = 0; i < n; ++i) z[i] = op(x[i], y[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) z[i] = op(x[i * ai], y[i * bi]);
  }
}

template <typename T, typename Op>
void Unary(const void* a, int64_t, const void*, int64_t, void* out, int64_t n) {
  const T* x = static_cast<const T*>(a);
  T* z = static_cast<T*>(out);
  Op op;
  for (int64_t i = 0; i < n; ++i) z[i] = op(x[i]);
}

struct AddOp {
  template <typename T>
  T operator()(T a, T b) const {
    return a + b;
  }
};
struct SubOp {
  template <typename T>
  T operator()(T a, T b) const {
    return a - b;
  }
};
struct MulOp {
  template <typename T>
  T operator()(T a, T b) const {
    return a * b;
  }
};
struct DivOp {
  template <typename T>
  T operator()(T a, T b) const {
    return a / b;
  }
};
struct SqDiffOp {
  template <typename T>
  T operator()(T a, T b) const {
    T d = a - b;
    return d * d;
  }
};
struct NegOp {
  template <typename T>
  T operator()(T a) const {
    return -a;
  }
};
struct SquareOp {
  template <typename T>
  T operator()(T a) const {
    return a * a;
  }
};

template <typename T>
FastElementwiseFn BinaryFor(std::string_view op) {
  if (op == "AddV2" || op == "Add") return &Binary<T, AddOp>;
  if (op == "Sub") return &Binary<T, SubOp>;
  if (op == "Mul") return &Binary<T, MulOp>;
  if (op == "RealDiv" || op == "Div") return &Binary<T, DivOp>;
  if (op == "SquaredDifference") return &Binary<T, SqDiffOp>;
  return nullptr;
}

template <typename T>
FastElementwiseFn UnaryFor(std::string_view op) {
  if (op == "Neg") return &Unary<T, NegOp>;
  if (op == "Square") return &Unary<T, SquareOp>;
  return nullptr;
}

}  // namespace

bool FastElementwiseEnabled() {
  static const bool enabled = [] {
    const char* v = std::getenv("TROUPE_GRAPH_FAST_ELEMENTWISE");
    return v == nullptr || std::strcmp(v, "0") != 0;
  }();
  return enabled;
}

FastElementwiseFn MatchFastElementwise(const Graph& graph, const Node& node, int64_t* a_inc,
                                       int64_t* b_inc) {
  if (node.kind != NodeKind::kKernel || node.outputs.size() != 1) return nullptr;
  const TensorSpec& out = node.outputs[0];
  if (!out.shape.IsFullyDefined() || out.shape.num_elements() > kFastElementwiseMaxElements ||
      (out.dtype != DType::kFloat32 && out.dtype != DType::kFloat64)) {
    return nullptr;
  }
  const int64_t n = out.shape.num_elements();
  auto inc_of = [&](const TensorSpec& in, int64_t* inc) {
    if (in.dtype != out.dtype || !in.shape.IsFullyDefined()) return false;
    if (in.shape == out.shape) {
      *inc = 1;
      return true;
    }
    if (in.shape.num_elements() == 1) {
      *inc = 0;
      return true;
    }
    return false;
  };
  const bool f32 = out.dtype == DType::kFloat32;
  if (node.inputs.size() == 2) {
    FastElementwiseFn fn = f32 ? BinaryFor<float>(node.op) : BinaryFor<double>(node.op);
    if (fn == nullptr) return nullptr;
    if (!inc_of(graph.spec(node.inputs[0]), a_inc) || !inc_of(graph.spec(node.inputs[1]), b_inc)) {
      return nullptr;
    }
    if (n == 0) return nullptr;
    return fn;
  }
  if (node.inputs.size() == 1) {
    FastElementwiseFn fn = f32 ? UnaryFor<float>(node.op) : UnaryFor<double>(node.op);
    if (fn == nullptr || graph.spec(node.inputs[0]).shape != out.shape ||
        graph.spec(node.inputs[0]).dtype != out.dtype) {
      return nullptr;
    }
    *a_inc = 1;
    *b_inc = 0;
    return fn;
  }
  return nullptr;
}

}  // namespace troupe::internal
