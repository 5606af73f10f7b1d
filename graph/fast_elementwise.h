// Executor fast path for small elementwise arithmetic with shapes known at trace time.
//
// NOTE (graph/-local kernels): these loops duplicate a few kernels/ ops — AddV2/Add, Sub, Mul,
// RealDiv/Div, SquaredDifference, Neg, Square on float32/float64 — for tensors of at most
// kMaxElements elements whose shapes the trace fixed (same shape, or one operand with a single
// element). Each computes one IEEE operation per element, so results are bit-identical to the
// kernels'; what they skip is the per-call work of a general kernel (KernelContext, shape
// inference, broadcasting plans, output bookkeeping), which dominates for tiny tensors (a
// scalar add costs ~1 ns, its dispatch through the kernel interface ~300 ns). Ops whose
// results could differ from kernels/ (transcendentals, NaN-sensitive max/min/relu) are not
// here. TROUPE_GRAPH_FAST_ELEMENTWISE=0 disables the path (bench/graph_compare.py reports
// both).
#pragma once

#include <cstdint>

#include "graph/graph.h"

namespace troupe::internal {

inline constexpr int64_t kFastElementwiseMaxElements = 16384;

// out[i] = f(a[i * a_inc], b[i * b_inc]) for i < n (b unused for unary ops).
using FastElementwiseFn = void (*)(const void* a, int64_t a_inc, const void* b, int64_t b_inc,
                                   void* out, int64_t n);

// The fast loop for `node` (a kernel node of `graph`), or null when it does not qualify.
// *a_inc / *b_inc are 0 for an operand broadcast from one element.
FastElementwiseFn MatchFastElementwise(const Graph& graph, const Node& node, int64_t* a_inc,
                                       int64_t* b_inc);

bool FastElementwiseEnabled();

}  // namespace troupe::internal
