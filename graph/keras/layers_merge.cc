// Keras merge layers (Multiply, Subtract, Average, Maximum, Minimum, Dot) and the numpy
// op-layers `x * y`, `x - y`, `x / y`, ops.maximum/minimum serialize to
// (keras.src.ops.numpy.*; keras.layers.Add and the op-layer Add live in layers_core.cc).
#include "graph/keras/factory_internal.h"
#include "graph/nn/merging.h"

namespace troupe::keras::internal {
namespace {

using LayerPtr = std::unique_ptr<KerasLayer>;

Maker MergeMaker(FunctionLayer::Fn fn) {
  return [fn](ConfigReader& r, int64_t) -> Result<LayerPtr> {
    return LayerPtr(std::make_unique<FunctionLayer>(r, fn));
  };
}

Maker OpLayerMaker(nn::BinaryOp op) {
  return MergeMaker([op](const std::vector<Value>& xs) { return nn::NumpyBinary(op, xs); });
}

Result<LayerPtr> MakeDot(ConfigReader& r, int64_t) {
  // Keras writes axes as an int or an (x, y) pair.
  TROUPE_ASSIGN_OR_RETURN(std::vector<int64_t> axes, r.Ints("axes", 0));
  if (axes.size() == 1) axes.push_back(axes[0]);
  if (axes.size() != 2) return r.Invalid("axes", "must be an int or a pair of ints");
  TROUPE_ASSIGN_OR_RETURN(bool normalize, r.Bool("normalize", false));
  const int64_t ax = axes[0], ay = axes[1];
  return LayerPtr(
      std::make_unique<FunctionLayer>(r, [ax, ay, normalize](const std::vector<Value>& xs) {
        return nn::DotPair(xs, ax, ay, normalize);
      }));
}

}  // namespace

void AddMergeMakers(MakerTable* t) {
  using B = nn::BinaryOp;
  (*t)["keras.layers.Multiply"] = MergeMaker(nn::MultiplyAll);
  (*t)["keras.layers.Subtract"] = MergeMaker(nn::SubtractPair);
  (*t)["keras.layers.Average"] = MergeMaker(nn::AverageAll);
  (*t)["keras.layers.Maximum"] = MergeMaker(nn::MaximumAll);
  (*t)["keras.layers.Minimum"] = MergeMaker(nn::MinimumAll);
  (*t)["keras.layers.Dot"] = MakeDot;
  (*t)["keras.src.ops.numpy.Multiply"] = OpLayerMaker(B::kMul);
  (*t)["keras.src.ops.numpy.Subtract"] = OpLayerMaker(B::kSub);
  (*t)["keras.src.ops.numpy.Divide"] = OpLayerMaker(B::kDiv);
  (*t)["keras.src.ops.numpy.TrueDivide"] = OpLayerMaker(B::kDiv);
  (*t)["keras.src.ops.numpy.Maximum"] = OpLayerMaker(B::kMax);
  (*t)["keras.src.ops.numpy.Minimum"] = OpLayerMaker(B::kMin);
}

}  // namespace troupe::keras::internal
