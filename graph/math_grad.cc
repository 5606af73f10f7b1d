// Gradients of elementwise math, reductions and MatMul (TF's math_grad.py formulas, so that
// results match TF's bit for bit where the kernels do).
#include <algorithm>

#include "graph/grad_util.h"
#include "graph/gradients.h"
#include "graph/ops.h"

namespace troupe {
namespace grad {

Value BroadcastBack(const Value& dy, const Value& x, std::vector<int64_t> axes, bool keep_dims) {
  const int rank = x.shape().rank();
  if (rank < 0) {
    return Value::Error(
        UnimplementedError("gradient of a reduction over an input of unknown rank"));
  }
  if (axes.empty()) {
    for (int d = 0; d < rank; ++d) axes.push_back(d);
  }
  for (int64_t& a : axes) {
    if (a < 0) a += rank;
  }
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  Value kept = dy;
  if (!keep_dims) {
    for (int64_t a : axes) kept = ops::ExpandDims(kept, a);
  }
  // A copy when x's shape is known (one pass over x's size); otherwise dy * 1, which is exact,
  // so either equals TF's tile bit for bit.
  if (x.shape().IsFullyDefined()) return ops::BroadcastTo(kept, x.shape().dims());
  return ops::Mul(kept, ops::OnesLike(x));
}

}  // namespace grad

namespace internal {
namespace {

using V = std::vector<Value>;

std::vector<int64_t> AxesOf(const OpCall& c) {
  if (!c.attrs.Has("axis")) return {};
  if (auto one = c.attrs.GetInt("axis"); one.ok()) return {*one};
  return c.attrs.GetInts("axis").value_or({});
}
bool KeepDims(const OpCall& c) { return c.attrs.GetBoolOr("keep_dims", false).value_or(false); }

}  // namespace

void RegisterMathGradients() {
  auto add = [](const OpCall& c, const V& dy, V* dx) {
    *dx = {grad::ReduceLike(dy[0], c.inputs[0]), grad::ReduceLike(dy[0], c.inputs[1])};
    return Status::OK();
  };
  RegisterGradient("AddV2", add);
  RegisterGradient("Add", add);
  RegisterGradient("Sub", [](const OpCall& c, const V& dy, V* dx) {
    *dx = {grad::ReduceLike(dy[0], c.inputs[0]), grad::ReduceLike(ops::Neg(dy[0]), c.inputs[1])};
    return Status::OK();
  });
  RegisterGradient("Mul", [](const OpCall& c, const V& dy, V* dx) {
    const Value& x = c.inputs[0];
    const Value& y = c.inputs[1];
    *dx = {grad::ReduceLike(ops::Mul(dy[0], y), x), grad::ReduceLike(ops::Mul(x, dy[0]), y)};
    return Status::OK();
  });
  auto div = [](const OpCall& c, const V& dy, V* dx) {
    const Value& x = c.inputs[0];
    const Value& y = c.inputs[1];
    *dx = {grad::ReduceLike(ops::Div(dy[0], y), x),
           grad::ReduceLike(ops::Mul(dy[0], ops::Div(ops::Div(ops::Neg(x), y), y)), y)};
    return Status::OK();
  };
  RegisterGradient("RealDiv", div);
  RegisterGradient("Div", div);
  RegisterGradient("DivNoNan", [](const OpCall& c, const V& dy, V* dx) {
    const Value& x = c.inputs[0];
    const Value& y = c.inputs[1];
    *dx = {grad::ReduceLike(ops::DivNoNan(dy[0], y), x),
           grad::ReduceLike(ops::Mul(dy[0], ops::DivNoNan(ops::DivNoNan(ops::Neg(x), y), y)), y)};
    return Status::OK();
  });
  RegisterGradient("SquaredDifference", [](const OpCall& c, const V& dy, V* dx) {
    const Value& x = c.inputs[0];
    const Value& y = c.inputs[1];
    Value g = ops::Mul(ops::Mul(ops::ScalarOf(2.0, dy[0].dtype()), dy[0]), ops::Sub(x, y));
    *dx = {grad::ReduceLike(g, x), grad::ReduceLike(ops::Neg(g), y)};
    return Status::OK();
  });
  auto minmax = [](bool is_max) {
    return [is_max](const OpCall& c, const V& dy, V* dx) {
      const Value& x = c.inputs[0];
      const Value& y = c.inputs[1];
      // TF selects dy or 0 by x >= y (x <= y for Minimum); multiplying by the 0/1 mask gives
      // the same values.
      Value mask =
          ops::Cast(is_max ? ops::GreaterEqual(x, y) : ops::LessEqual(x, y), dy[0].dtype());
      *dx = {grad::ReduceLike(ops::Mul(dy[0], mask), x),
             grad::ReduceLike(ops::Mul(dy[0], ops::Sub(ops::OnesLike(mask), mask)), y)};
      return Status::OK();
    };
  };
  RegisterGradient("Maximum", minmax(true));
  RegisterGradient("Minimum", minmax(false));
  RegisterGradient("Pow", [](const OpCall& c, const V& dy, V* dx) {
    const Value& x = c.inputs[0];
    const Value& y = c.inputs[1];
    const Value& z = c.outputs[0];
    Value gx = ops::Mul(ops::Mul(dy[0], y), ops::Pow(x, ops::Sub(y, ops::OnesLike(y))));
    // log(x) where x > 0, else 0 (TF's convention), with a 0/1 mask instead of a select.
    Value positive = ops::Cast(ops::Greater(x, ops::ZerosLike(x)), x.dtype());
    Value safe_x = ops::Add(ops::Mul(x, positive), ops::Sub(ops::OnesLike(positive), positive));
    Value log_x = ops::Mul(ops::Log(safe_x), positive);
    Value gy = ops::Mul(ops::Mul(dy[0], z), log_x);
    *dx = {grad::ReduceLike(gx, x), grad::ReduceLike(gy, y)};
    return Status::OK();
  });

  RegisterGradient("Neg", [](const OpCall&, const V& dy, V* dx) {
    *dx = {ops::Neg(dy[0])};
    return Status::OK();
  });
  RegisterGradient("Abs", [](const OpCall& c, const V& dy, V* dx) {
    *dx = {ops::Mul(dy[0], ops::Sign(c.inputs[0]))};
    return Status::OK();
  });
  RegisterGradient("Sign", [](const OpCall& c, const V&, V* dx) {
    *dx = {ops::ZerosLike(c.inputs[0])};
    return Status::OK();
  });
  RegisterGradient("Square", [](const OpCall& c, const V& dy, V* dx) {
    *dx = {ops::Mul(dy[0], ops::Mul(ops::ScalarOf(2.0, c.inputs[0].dtype()), c.inputs[0]))};
    return Status::OK();
  });
  RegisterGradient("Sqrt", [](const OpCall& c, const V& dy, V* dx) {
    *dx = {Apply1("SqrtGrad", {c.outputs[0], dy[0]}, {}, "SqrtGrad")};
    return Status::OK();
  });
  RegisterGradient("Rsqrt", [](const OpCall& c, const V& dy, V* dx) {
    *dx = {Apply1("RsqrtGrad", {c.outputs[0], dy[0]}, {}, "RsqrtGrad")};
    return Status::OK();
  });
  RegisterGradient("Reciprocal", [](const OpCall& c, const V& dy, V* dx) {
    *dx = {Apply1("ReciprocalGrad", {c.outputs[0], dy[0]}, {}, "ReciprocalGrad")};
    return Status::OK();
  });
  RegisterGradient("Exp", [](const OpCall& c, const V& dy, V* dx) {
    *dx = {ops::Mul(dy[0], c.outputs[0])};
    return Status::OK();
  });
  RegisterGradient("Log", [](const OpCall& c, const V& dy, V* dx) {
    *dx = {ops::Mul(dy[0], ops::Reciprocal(c.inputs[0]))};
    return Status::OK();
  });
  // TF's _Log1pGrad: dy * reciprocal(1 + x).
  RegisterGradient("Log1p", [](const OpCall& c, const V& dy, V* dx) {
    const Value& x = c.inputs[0];
    *dx = {ops::Mul(dy[0], ops::Reciprocal(ops::Add(ops::ScalarOf(1.0, x.dtype()), x)))};
    return Status::OK();
  });

  RegisterGradient("MatMul", [](const OpCall& c, const V& dy, V* dx) {
    const bool ta = c.attrs.GetBoolOr("transpose_a", false).value_or(false);
    const bool tb = c.attrs.GetBoolOr("transpose_b", false).value_or(false);
    const Value& a = c.inputs[0];
    const Value& b = c.inputs[1];
    const Value& g = dy[0];
    if (!ta && !tb) {
      *dx = {ops::MatMul(g, b, false, true), ops::MatMul(a, g, true, false)};
    } else if (!ta && tb) {
      *dx = {ops::MatMul(g, b, false, false), ops::MatMul(g, a, true, false)};
    } else if (ta && !tb) {
      *dx = {ops::MatMul(b, g, false, true), ops::MatMul(a, g, false, false)};
    } else {
      *dx = {ops::MatMul(b, g, true, true), ops::MatMul(g, a, true, true)};
    }
    return Status::OK();
  });

  // TF's _BatchMatMulV2Grad: the MatMul cases per adjoint flags, then each gradient summed
  // over the batch dims along which its input was broadcast.
  RegisterGradient("BatchMatMulV2", [](const OpCall& c, const V& dy, V* dx) {
    const bool ax = c.attrs.GetBoolOr("adj_x", false).value_or(false);
    const bool ay = c.attrs.GetBoolOr("adj_y", false).value_or(false);
    const Value& x = c.inputs[0];
    const Value& y = c.inputs[1];
    const Value& g = dy[0];
    Value gx, gy;
    if (!ax && !ay) {
      gx = ops::BatchMatMul(g, y, false, true), gy = ops::BatchMatMul(x, g, true, false);
    } else if (!ax && ay) {
      gx = ops::BatchMatMul(g, y, false, false), gy = ops::BatchMatMul(g, x, true, false);
    } else if (ax && !ay) {
      gx = ops::BatchMatMul(y, g, false, true), gy = ops::BatchMatMul(x, g, false, false);
    } else {
      gx = ops::BatchMatMul(y, g, true, true), gy = ops::BatchMatMul(g, x, true, true);
    }
    *dx = {grad::ReduceLike(gx, x), grad::ReduceLike(gy, y)};
    return Status::OK();
  });
  // TF's _ErfGrad: grad * (2 / sqrt(pi)) * exp(-x^2), multiplied in that order.
  RegisterGradient("Erf", [](const OpCall& c, const V& dy, V* dx) {
    const Value& x = c.inputs[0];
    Value two_over_root_pi = ops::ScalarOf(1.1283791670955126, dy[0].dtype());
    *dx = {ops::Mul(ops::Mul(dy[0], two_over_root_pi), ops::Exp(ops::Neg(ops::Square(x))))};
    return Status::OK();
  });

  // nn::Gelu's fused form (CPU only): the exact derivative in one op.
  RegisterGradient("FusedGelu", [](const OpCall& c, const V& dy, V* dx) {
    *dx = {Apply1("FusedGeluGrad", {dy[0], c.inputs[0]}, {}, "GeluGrad")};
    return Status::OK();
  });

  RegisterGradient("Sum", [](const OpCall& c, const V& dy, V* dx) {
    *dx = {grad::BroadcastBack(dy[0], c.inputs[0], AxesOf(c), KeepDims(c))};
    return Status::OK();
  });
  RegisterGradient("Mean", [](const OpCall& c, const V& dy, V* dx) {
    const Value& x = c.inputs[0];
    const Value& y = c.outputs[0];
    Value factor;
    if (x.shape().IsFullyDefined() && y.shape().IsFullyDefined()) {
      const int64_t out = std::max<int64_t>(y.shape().num_elements(), 1);
      factor = ops::ScalarOf(static_cast<double>(x.shape().num_elements() / out), dy[0].dtype());
    } else {
      Value in_size = ops::Cast(ops::Prod(ops::Shape(x)), dy[0].dtype());
      Value out_size = ops::Cast(ops::Prod(ops::Shape(y)), dy[0].dtype());
      factor = ops::Div(in_size, ops::Maximum(out_size, ops::OnesLike(out_size)));
    }
    // Dividing before broadcasting touches the reduced size only; the quotients are the same
    // (dy * 1 / f == dy / f), so the bits equal TF's broadcast-then-divide.
    *dx = {grad::BroadcastBack(ops::Div(dy[0], factor), x, AxesOf(c), KeepDims(c))};
    return Status::OK();
  });
  auto minmax_reduce = [](const OpCall& c, const V& dy, V* dx) {
    const Value& x = c.inputs[0];
    std::vector<int64_t> axes = AxesOf(c);
    const bool keep = KeepDims(c);
    Value y = grad::BroadcastBack(c.outputs[0], x, axes, keep);
    Value indicators = ops::Cast(ops::Equal(y, x), dy[0].dtype());
    Value num_selected = ops::Sum(indicators, axes, /*keep_dims=*/true);
    Value g = grad::BroadcastBack(dy[0], x, axes, keep);
    *dx = {ops::Mul(ops::Div(indicators, num_selected), g)};
    return Status::OK();
  };
  RegisterGradient("Max", minmax_reduce);
  // d prod / d x_i = prod / x_i (inputs must be nonzero; TF's cumprod form handles zeros).
  RegisterGradient("Prod", [](const OpCall& c, const V& dy, V* dx) {
    const Value& x = c.inputs[0];
    if (!IsFloating(x.dtype())) {
      *dx = {Value()};
      return Status::OK();
    }
    std::vector<int64_t> axes = AxesOf(c);
    const bool keep = KeepDims(c);
    Value y = grad::BroadcastBack(c.outputs[0], x, axes, keep);
    Value g = grad::BroadcastBack(dy[0], x, axes, keep);
    *dx = {ops::Mul(g, ops::Div(y, x))};
    return Status::OK();
  });
  RegisterGradient("Min", minmax_reduce);
}

}  // namespace internal
}  // namespace troupe
