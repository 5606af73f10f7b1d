// cuDNN plans for the GPU Conv2D family (CUDA translation units only): the descriptors and the
// ordered list of deterministic algorithms for one (device, direction, dtype, layout, geometry),
// built once and cached for the life of the process.
//
// Algorithms (all deterministic, FP32 through CUDNN_FMA_MATH, so never TF32):
//   forward:         IMPLICIT_PRECOMP_GEMM, IMPLICIT_GEMM, GEMM (every forward algo is
//                    deterministic)
//   backward data:   ALGO_1 (ALGO_0 accumulates with atomics and is not deterministic)
//   backward filter: ALGO_1 (ALGO_0 and ALGO_3 are not deterministic)
// then whatever cuDNN's heuristics (…_v7) report as CUDNN_DETERMINISTIC, except FFT and
// Winograd (they round differently from a direct sum: not within 1e-5 of the CPU). An
// algorithm whose workspace query fails is left out; one that fails with NOT_SUPPORTED when run
// is dropped from the plan. A layout with no algorithm left is unusable (the caller then tries
// NCHW with explicit transposes).
#pragma once

#include <cudnn.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/result.h"
#include "kernels/conv_geometry.h"

namespace troupe::gpu_dense {

enum class ConvKind { kForward, kBackwardData, kBackwardFilter };
enum class ConvLayout { kNHWC, kNCHW };

// Conv geometry in TF terms (NHWC input, HWIO filter; kernels/conv_geometry.h). cuDNN pads
// symmetrically, TF's SAME puts the odd pad row/column at the bottom/right: cuDNN sees an input
// of CudnnH x CudnnW, with ExtraBottom/ExtraRight zero rows/columns appended, padded pt/pl on
// both sides.
using ConvGeo = kernels::ConvGeo;
inline int64_t ExtraBottom(const ConvGeo& g) { return g.pb - g.pt; }
inline int64_t ExtraRight(const ConvGeo& g) { return g.pr - g.pl; }
inline int64_t CudnnH(const ConvGeo& g) { return g.h + ExtraBottom(g); }
inline int64_t CudnnW(const ConvGeo& g) { return g.w + ExtraRight(g); }

struct ConvAlgo {
  int algo;          // cudnnConvolution{Fwd,BwdData,BwdFilter}Algo_t
  size_t workspace;  // bytes
};

struct ConvPlan {
  ConvPlan() = default;
  ConvPlan(const ConvPlan&) = delete;
  ConvPlan& operator=(const ConvPlan&) = delete;
  ~ConvPlan();

  cudnnTensorDescriptor_t x = nullptr;  // input (padded), layout-specific
  cudnnTensorDescriptor_t y = nullptr;  // output / out_backprop
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  std::vector<ConvAlgo> algos;  // best first; empty: this layout is unusable
  std::string why_unusable;
};

const char* KindName(ConvKind kind);        // "forward", ...
const char* LayoutName(ConvLayout layout);  // "NHWC" / "NCHW"
std::string GeoString(const ConvGeo& g);    // "input [n,h,w,c] filter [kh,kw,c,f] ..."

// The cached plan; the caller must hold `handle` (its device's cuDNN lease) while using it, which
// also serializes edits of `algos`. Errors name the device, `op`, the cuDNN call and the shapes.
Result<ConvPlan*> GetConvPlan(cudnnHandle_t handle, int device, std::string_view op, ConvKind kind,
                              DType dtype, ConvLayout layout, const ConvGeo& g);

}  // namespace troupe::gpu_dense
