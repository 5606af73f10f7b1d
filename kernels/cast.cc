// Cast(x; attr DstT) between numeric dtypes with C++ conversion semantics like TF's CPU kernel:
// float -> int truncates toward zero, anything -> bool is "!= 0", bool -> number is 0/1.
#include <type_traits>

#include "core/dtype_traits.h"
#include "kernels/kernel_util.h"
#include "kernels/register_ops.h"

namespace troupe {
namespace kernels {
namespace {

template <typename T>
constexpr bool kIsEigenFloat = std::is_same_v<T, half> || std::is_same_v<T, bfloat16>;

template <typename Dst, typename Src>
Dst Convert(Src x) {
  if constexpr (std::is_same_v<Dst, bool>) {
    return static_cast<float>(x) != 0.0f;
  } else if constexpr (kIsEigenFloat<Src> && !kIsEigenFloat<Dst>) {
    return static_cast<Dst>(static_cast<float>(x));
  } else if constexpr (kIsEigenFloat<Dst> && !std::is_floating_point_v<Src>) {
    return static_cast<Dst>(static_cast<float>(x));
  } else {
    return static_cast<Dst>(x);
  }
}

Result<SpecList> CastShape(Specs in, const AttrMap& attrs) {
  auto dst = attrs.GetDType("DstT");
  if (!dst.ok()) return dst.status().WithContext("Cast");
  for (auto [arg, t] : {std::pair{"x", in[0].dtype}, std::pair{"DstT", *dst}}) {
    if (t == DType::kString || t == DType::kInvalid) {
      return OpError("Cast", std::string("'") + arg + "' has dtype " + std::string(DTypeName(t)) +
                                 "; only numeric casts are supported");
    }
  }
  return SpecList{TensorSpec{in[0].shape, *dst, ""}};
}

}  // namespace
}  // namespace kernels

void RegisterCastOps(OpRegistry& r) {
  using namespace kernels;  // NOLINT
  Register(r, {.name = "Cast", .num_inputs = 1, .infer_shapes = CastShape},
           [](KernelContext& ctx) -> Status {
             TROUPE_ASSIGN_OR_RETURN(SpecList out, CastShape(InputSpecs(ctx), ctx.attrs()));
             const Tensor& x = ctx.input(0);
             if (out[0].dtype == x.dtype()) {
               ctx.SetOutput(0, x);
               return Status::OK();
             }
             TROUPE_ASSIGN_OR_RETURN(Tensor y, ctx.AllocateOutput(0, out[0].dtype, x.shape()));
             VisitNumericDType(x.dtype(), [&](auto src_tag) {
               using Src = decltype(src_tag);
               VisitNumericDType(y.dtype(), [&](auto dst_tag) {
                 using Dst = decltype(dst_tag);
                 const Src* in = x.data<Src>();
                 Dst* o = y.data<Dst>();
                 ParallelFor(ctx.pool(), x.num_elements(), 1, [&](int64_t b, int64_t e) {
                   for (int64_t i = b; i < e; ++i) o[i] = Convert<Dst>(in[i]);
                 });
               });
             });
             return Status::OK();
           });
}

}  // namespace troupe
