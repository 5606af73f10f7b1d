// The device the graph being built will run on, for code that picks ops by device.
#pragma once

#include "core/device.h"

namespace troupe {

// The innermost tracing Function's device, or a non-CPU device of an enclosing trace (an inner
// Function's graph is inlined into the outer one); the CPU outside traces, where eager ops run.
// Lets layers use ops that only have CPU kernels (the fused normalizations) where they run.
Device TracingDevice();

}  // namespace troupe
