#include <algorithm>
#include <climits>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <string_view>

#include "kernels/cuda/dense_conv_plan.h"
#include "kernels/cuda/dense_util.h"

namespace troupe::gpu_dense {
namespace {

// Algorithms needing more workspace than this are skipped.
constexpr size_t kMaxWorkspace = size_t{4} << 30;

std::string Dims(std::initializer_list<int64_t> d) {
  std::string s = "[";
  bool first = true;
  for (int64_t x : d) {
    if (!first) s += ',';
    s += std::to_string(x);
    first = false;
  }
  s += ']';
  return s;
}

Status CudnnError(int device, std::string_view op, const std::string& call, cudnnStatus_t s,
                  const ConvGeo& g) {
  return InternalError(Where(device, op) + call + " on " + GeoString(g) + ": " +
                       cudnnGetErrorString(s));
}

// FFT and Winograd algorithms transform the data and round differently from a direct sum;
// they are left out so results stay within 1e-5 of the CPU kernels.
bool IsTransformAlgo(ConvKind kind, int algo) {
  switch (kind) {
    case ConvKind::kForward:
      return algo == CUDNN_CONVOLUTION_FWD_ALGO_FFT ||
             algo == CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING ||
             algo == CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD ||
             algo == CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED;
    case ConvKind::kBackwardData:
      return algo == CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT ||
             algo == CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING ||
             algo == CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD ||
             algo == CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED;
    case ConvKind::kBackwardFilter:
      return algo == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT ||
             algo == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING ||
             algo == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED;
  }
  return true;
}

std::vector<int> PreferredAlgos(ConvKind kind) {
  switch (kind) {
    case ConvKind::kForward:
      return {CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM,
              CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, CUDNN_CONVOLUTION_FWD_ALGO_GEMM};
    case ConvKind::kBackwardData:
      return {CUDNN_CONVOLUTION_BWD_DATA_ALGO_1};
    case ConvKind::kBackwardFilter:
      return {CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1};
  }
  return {};
}

// The algorithms of a cuDNN _v7 heuristic's answer (`query(kCount, &returned, perf)`) that it
// reports as deterministic, in its order; none when the query fails.
template <typename Perf, int kCount, typename Query>
std::vector<int> DeterministicAlgos(Query query) {
  Perf perf[kCount];
  int returned = 0;
  std::vector<int> out;
  if (query(kCount, &returned, perf) != CUDNN_STATUS_SUCCESS) return out;
  for (int i = 0; i < returned; ++i) {
    if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].determinism == CUDNN_DETERMINISTIC)
      out.push_back(perf[i].algo);
  }
  return out;
}

// Algorithms cuDNN's heuristics rank for this problem that it reports as deterministic.
std::vector<int> HeuristicAlgos(cudnnHandle_t handle, ConvKind kind, const ConvPlan& p) {
  switch (kind) {
    case ConvKind::kForward:
      return DeterministicAlgos<cudnnConvolutionFwdAlgoPerf_t, CUDNN_CONVOLUTION_FWD_ALGO_COUNT>(
          [&](int n, int* r, auto* perf) {
            return cudnnGetConvolutionForwardAlgorithm_v7(handle, p.x, p.w, p.conv, p.y, n, r,
                                                          perf);
          });
    case ConvKind::kBackwardData:
      return DeterministicAlgos<cudnnConvolutionBwdDataAlgoPerf_t,
                                CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT>(
          [&](int n, int* r, auto* perf) {
            return cudnnGetConvolutionBackwardDataAlgorithm_v7(handle, p.w, p.y, p.conv, p.x, n, r,
                                                               perf);
          });
    case ConvKind::kBackwardFilter:
      return DeterministicAlgos<cudnnConvolutionBwdFilterAlgoPerf_t,
                                CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT>(
          [&](int n, int* r, auto* perf) {
            return cudnnGetConvolutionBackwardFilterAlgorithm_v7(handle, p.x, p.y, p.conv, p.w, n,
                                                                 r, perf);
          });
  }
  return {};
}

// TROUPE_CUDNN_AUTOTUNE=1 times the candidates once per shape (cudnnFind*) and tries the
// fastest first. Off by default: timing noise can pick another algorithm in another run, and
// algorithms round differently, so two runs would no longer give the same bits (TF's
// TF_CUDNN_USE_AUTOTUNE has the same trade-off).
bool AutotuneEnabled() {
  static const bool on = [] {
    const char* v = std::getenv("TROUPE_CUDNN_AUTOTUNE");
    return v != nullptr && std::string_view(v) == "1";
  }();
  return on;
}

template <typename Perf>
void Reorder(const Perf* perf, int returned, ConvPlan& p) {
  std::vector<ConvAlgo> ordered;
  for (int i = 0; i < returned; ++i) {
    if (perf[i].status != CUDNN_STATUS_SUCCESS || perf[i].mathType == CUDNN_TENSOR_OP_MATH ||
        perf[i].mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION)
      continue;
    for (const ConvAlgo& a : p.algos) {
      if (a.algo == static_cast<int>(perf[i].algo) &&
          std::none_of(ordered.begin(), ordered.end(),
                       [&](const ConvAlgo& o) { return o.algo == a.algo; }))
        ordered.push_back(a);
    }
  }
  for (const ConvAlgo& a : p.algos) {  // candidates the search did not time keep their place
    if (std::none_of(ordered.begin(), ordered.end(),
                     [&](const ConvAlgo& o) { return o.algo == a.algo; }))
      ordered.push_back(a);
  }
  p.algos = std::move(ordered);
}

void OrderByMeasuredTime(cudnnHandle_t handle, ConvKind kind, ConvPlan& p) {
  if (p.algos.size() < 2) return;
  int returned = 0;
  switch (kind) {
    case ConvKind::kForward: {
      cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
      if (cudnnFindConvolutionForwardAlgorithm(handle, p.x, p.w, p.conv, p.y,
                                               CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &returned,
                                               perf) == CUDNN_STATUS_SUCCESS)
        Reorder(perf, returned, p);
      break;
    }
    case ConvKind::kBackwardData: {
      cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
      if (cudnnFindConvolutionBackwardDataAlgorithm(handle, p.w, p.y, p.conv, p.x,
                                                    CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT,
                                                    &returned, perf) == CUDNN_STATUS_SUCCESS)
        Reorder(perf, returned, p);
      break;
    }
    case ConvKind::kBackwardFilter: {
      cudnnConvolutionBwdFilterAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
      if (cudnnFindConvolutionBackwardFilterAlgorithm(handle, p.x, p.y, p.conv, p.w,
                                                      CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT,
                                                      &returned, perf) == CUDNN_STATUS_SUCCESS)
        Reorder(perf, returned, p);
      break;
    }
  }
}

cudnnStatus_t WorkspaceSize(cudnnHandle_t handle, ConvKind kind, const ConvPlan& p, int algo,
                            size_t* bytes) {
  switch (kind) {
    case ConvKind::kForward:
      return cudnnGetConvolutionForwardWorkspaceSize(
          handle, p.x, p.w, p.conv, p.y, static_cast<cudnnConvolutionFwdAlgo_t>(algo), bytes);
    case ConvKind::kBackwardData:
      return cudnnGetConvolutionBackwardDataWorkspaceSize(
          handle, p.w, p.y, p.conv, p.x, static_cast<cudnnConvolutionBwdDataAlgo_t>(algo), bytes);
    case ConvKind::kBackwardFilter:
      return cudnnGetConvolutionBackwardFilterWorkspaceSize(
          handle, p.x, p.y, p.conv, p.w, static_cast<cudnnConvolutionBwdFilterAlgo_t>(algo), bytes);
  }
  return CUDNN_STATUS_BAD_PARAM;
}

Status BuildPlan(cudnnHandle_t handle, int device, std::string_view op, ConvKind kind, DType dtype,
                 ConvLayout layout, const ConvGeo& g, ConvPlan& p) {
  for (int64_t elements :
       {g.n * CudnnH(g) * CudnnW(g) * g.c, g.n * g.oh * g.ow * g.f, g.kh * g.kw * g.c * g.f}) {
    if (elements > INT_MAX) {
      return UnimplementedError(Where(device, op) + GeoString(g) +
                                ": a tensor has more than 2^31-1 elements, beyond cuDNN's "
                                "legacy convolution API (split the batch)");
    }
  }
  const cudnnDataType_t type = dtype == DType::kFloat64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
  const cudnnTensorFormat_t format =
      layout == ConvLayout::kNHWC ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
  auto check = [&](const char* call, cudnnStatus_t s) -> Status {
    if (s == CUDNN_STATUS_SUCCESS) return Status::OK();
    return CudnnError(device, op, call, s, g);
  };
  TROUPE_RETURN_IF_ERROR(check("cudnnCreateTensorDescriptor", cudnnCreateTensorDescriptor(&p.x)));
  TROUPE_RETURN_IF_ERROR(check("cudnnCreateTensorDescriptor", cudnnCreateTensorDescriptor(&p.y)));
  TROUPE_RETURN_IF_ERROR(check("cudnnCreateFilterDescriptor", cudnnCreateFilterDescriptor(&p.w)));
  TROUPE_RETURN_IF_ERROR(
      check("cudnnCreateConvolutionDescriptor", cudnnCreateConvolutionDescriptor(&p.conv)));
  const int n = static_cast<int>(g.n), c = static_cast<int>(g.c), f = static_cast<int>(g.f);
  TROUPE_RETURN_IF_ERROR(
      check("cudnnSetTensor4dDescriptor(input)",
            cudnnSetTensor4dDescriptor(p.x, format, type, n, c, static_cast<int>(CudnnH(g)),
                                       static_cast<int>(CudnnW(g)))));
  TROUPE_RETURN_IF_ERROR(
      check("cudnnSetTensor4dDescriptor(output)",
            cudnnSetTensor4dDescriptor(p.y, format, type, n, f, static_cast<int>(g.oh),
                                       static_cast<int>(g.ow))));
  // NHWC filter format is KRSC ([out, h, w, in]); NCHW is KCRS.
  TROUPE_RETURN_IF_ERROR(
      check("cudnnSetFilter4dDescriptor",
            cudnnSetFilter4dDescriptor(p.w, type, format, f, c, static_cast<int>(g.kh),
                                       static_cast<int>(g.kw))));
  TROUPE_RETURN_IF_ERROR(
      check("cudnnSetConvolution2dDescriptor",
            cudnnSetConvolution2dDescriptor(p.conv, static_cast<int>(g.pt), static_cast<int>(g.pl),
                                            static_cast<int>(g.sh), static_cast<int>(g.sw), 1, 1,
                                            CUDNN_CROSS_CORRELATION, type)));
  // Plain FMA math: no tensor cores, so FP32 is never rounded to TF32.
  TROUPE_RETURN_IF_ERROR(
      check("cudnnSetConvolutionMathType", cudnnSetConvolutionMathType(p.conv, CUDNN_FMA_MATH)));
  int on = 0, oc = 0, oh = 0, ow = 0;
  TROUPE_RETURN_IF_ERROR(
      check("cudnnGetConvolution2dForwardOutputDim",
            cudnnGetConvolution2dForwardOutputDim(p.conv, p.x, p.w, &on, &oc, &oh, &ow)));
  if (on != g.n || oc != g.f || oh != g.oh || ow != g.ow) {
    return InternalError(Where(device, op) + "cuDNN computes output " + Dims({on, oh, ow, oc}) +
                         " (NHWC) but TF's padding gives " + Dims({g.n, g.oh, g.ow, g.f}) +
                         " for " + GeoString(g));
  }
  std::vector<int> candidates = PreferredAlgos(kind);
  for (int a : HeuristicAlgos(handle, kind, p)) {
    if (!IsTransformAlgo(kind, a) &&
        std::find(candidates.begin(), candidates.end(), a) == candidates.end())
      candidates.push_back(a);
  }
  std::string tried;
  for (int a : candidates) {
    size_t bytes = 0;
    const cudnnStatus_t s = WorkspaceSize(handle, kind, p, a, &bytes);
    if (s == CUDNN_STATUS_SUCCESS && bytes <= kMaxWorkspace) {
      p.algos.push_back({a, bytes});
    } else {
      tried += " algo " + std::to_string(a) + ": " +
               (s == CUDNN_STATUS_SUCCESS ? std::string("workspace too large")
                                          : cudnnGetErrorString(s)) +
               ";";
    }
  }
  if (p.algos.empty()) {
    p.why_unusable = std::string(LayoutName(layout)) + " " + KindName(kind) +
                     ": no deterministic algorithm (" + tried + ")";
  }
  if (AutotuneEnabled()) OrderByMeasuredTime(handle, kind, p);
  return Status::OK();
}

}  // namespace

ConvPlan::~ConvPlan() {
  if (x) cudnnDestroyTensorDescriptor(x);
  if (y) cudnnDestroyTensorDescriptor(y);
  if (w) cudnnDestroyFilterDescriptor(w);
  if (conv) cudnnDestroyConvolutionDescriptor(conv);
}

const char* KindName(ConvKind kind) {
  switch (kind) {
    case ConvKind::kForward:
      return "forward";
    case ConvKind::kBackwardData:
      return "backward data";
    case ConvKind::kBackwardFilter:
      return "backward filter";
  }
  return "?";
}

const char* LayoutName(ConvLayout layout) { return layout == ConvLayout::kNHWC ? "NHWC" : "NCHW"; }

std::string GeoString(const ConvGeo& g) {
  return "input " + Dims({g.n, g.h, g.w, g.c}) + " filter " + Dims({g.kh, g.kw, g.c, g.f}) +
         " output " + Dims({g.n, g.oh, g.ow, g.f}) + " strides " + Dims({g.sh, g.sw}) +
         " pad top/left " + Dims({g.pt, g.pl}) + " extra bottom/right " +
         Dims({ExtraBottom(g), ExtraRight(g)});
}

Result<ConvPlan*> GetConvPlan(cudnnHandle_t handle, int device, std::string_view op, ConvKind kind,
                              DType dtype, ConvLayout layout, const ConvGeo& g) {
  static std::mutex mu;
  // Plans live for the process (one per distinct shape, like TF's autotune cache).
  static auto* plans = new std::map<std::vector<int64_t>, std::unique_ptr<ConvPlan>>();
  const std::vector<int64_t> key = {device,
                                    static_cast<int64_t>(kind),
                                    static_cast<int64_t>(dtype),
                                    static_cast<int64_t>(layout),
                                    g.n,
                                    g.h,
                                    g.w,
                                    g.c,
                                    g.kh,
                                    g.kw,
                                    g.f,
                                    g.sh,
                                    g.sw,
                                    g.pt,
                                    g.pl,
                                    ExtraBottom(g),
                                    ExtraRight(g)};
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = plans->find(key);
    if (it != plans->end()) return it->second.get();
  }
  auto plan = std::make_unique<ConvPlan>();
  TROUPE_RETURN_IF_ERROR(BuildPlan(handle, device, op, kind, dtype, layout, g, *plan));
  std::lock_guard<std::mutex> lock(mu);
  std::unique_ptr<ConvPlan>& slot = (*plans)[key];
  if (!slot) slot = std::move(plan);
  return slot.get();
}

}  // namespace troupe::gpu_dense
