// The device the graph being built will run on, for code that picks ops by device.
#pragma once

#include "core/device.h"

namespace troupe {

// The innermost tracing Function's device, or a non-CPU device of an enclosing trace (an inner
// Function's graph is inlined into the outer one); the CPU outside traces, where eager ops run.
// Lets layers use ops that only have CPU kernels (the fused normalizations) where they run.
Device TracingDevice();

// Whether graph/ emits its CPU-only fused ops (FusedBatchNormTraining, FusedLayerNorm,
// SoftmaxGrad) here: tracing for the CPU, unless TROUPE_FUSED_OPS=0 is set (for before/after
// comparisons; the unfused graphs give the same forward bits).
bool UseCpuFusedOps();

}  // namespace troupe
