// Registration of the GPU (CUDA) kernels: RegisterGpuKernels adds a Device kGpu kernel for every
// op family below; RegisterBuiltinOps calls it when Troupe is built with CUDA. Each family lives
// in its own kernels/cuda/*.cu file.
#pragma once

namespace troupe {

class OpRegistry;

void RegisterGpuKernels(OpRegistry& registry);

void RegisterGpuMatMulKernels(OpRegistry& registry);       // MatMul (cuBLAS)
void RegisterGpuConvKernels(OpRegistry& registry);         // Conv2D + backprops (cuDNN)
void RegisterGpuPoolingKernels(OpRegistry& registry);      // Max/AvgPool + grads
void RegisterGpuBiasKernels(OpRegistry& registry);         // BiasAdd, BiasAddGrad
void RegisterGpuElementwiseKernels(OpRegistry& registry);  // binary (broadcasting), unary, compare
void RegisterGpuReductionKernels(OpRegistry& registry);    // Sum, Mean, Max, SumToShapeOf, ArgMax
void RegisterGpuSoftmaxKernels(OpRegistry& registry);      // Softmax, LogSoftmax, *CrossEntropy*
void RegisterGpuArrayKernels(OpRegistry& registry);        // views, Cast, Fill, *Like, AddN, ...
void RegisterGpuSlicingKernels(OpRegistry& registry);      // Slice, Pad
void RegisterGpuBatchMatMulKernels(OpRegistry& registry);  // BatchMatMulV2 (cuBLAS)
void RegisterGpuGatherKernels(OpRegistry& registry);       // GatherV2, UnsortedSegmentSum

}  // namespace troupe
