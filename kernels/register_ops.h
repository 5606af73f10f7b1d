// Internal: the registration functions of every op family. OpRegistry::Global() calls
// RegisterBuiltinOps once; add a new family's function to register_ops.cc.
#pragma once

namespace troupe {

class OpRegistry;

void RegisterBuiltinOps(OpRegistry& registry);

void RegisterArrayOps(OpRegistry& registry);             // Identity, Reshape, Shape, ...
void RegisterElementwiseOps(OpRegistry& registry);       // Add, Sub, Mul, Div, ... (broadcasting)
void RegisterUnaryOps(OpRegistry& registry);             // Neg, Square, Sqrt, Exp, ... + grads
void RegisterActivationOps(OpRegistry& registry);        // Relu, Relu6, Elu, LeakyRelu, ... + grads
void RegisterActivationExtraOps(OpRegistry& registry);   // Softplus, Softsign, Selu + grads
void RegisterCompareOps(OpRegistry& registry);           // Equal, Less, ...
void RegisterArgMaxOps(OpRegistry& registry);            // ArgMax
void RegisterCastOps(OpRegistry& registry);              // Cast
void RegisterRoundToPrecisionOps(OpRegistry& registry);  // RoundToPrecision
void RegisterTransposeOps(OpRegistry& registry);         // Transpose
void RegisterSlicingOps(OpRegistry& registry);           // ConcatV2, Pack, Unpack, Slice, Pad, ...
void RegisterConv2DOps(OpRegistry& registry);            // Conv2D + backprops
void RegisterPoolingOps(OpRegistry& registry);           // MaxPool, AvgPool + grads
void RegisterSoftmaxOps(OpRegistry& registry);           // Softmax, LogSoftmax, *CrossEntropy*
void RegisterBiasOps(OpRegistry& registry);              // BiasAdd, BiasAddGrad
void RegisterBatchNormOps(OpRegistry& registry);         // Fused BatchNorm, LayerNorm + grads
void RegisterMatMulOps(OpRegistry& registry);            // MatMul
void RegisterBatchMatMulOps(OpRegistry& registry);       // BatchMatMulV2
void RegisterGatherOps(OpRegistry& registry);            // GatherV2, UnsortedSegmentSum
void RegisterDepthwiseConvOps(OpRegistry& registry);     // DepthwiseConv2dNative + backprops
void RegisterReductionOps(OpRegistry& registry);         // Sum, Mean, Max, Min, Prod
void RegisterBroadcastGradOps(OpRegistry& registry);     // BroadcastGradientArgs, SumToShapeOf
void RegisterImageTransformOps(
    OpRegistry& registry);  // ImageProjectiveTransform, RotationTransform

}  // namespace troupe
