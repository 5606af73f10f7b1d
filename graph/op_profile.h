// Per-op timing for finding hot spots: with TROUPE_PROFILE_OPS=1 in the environment the
// executor times every kernel step (on a GPU it waits for the device before and after the
// kernel, so the times are the kernels' own, and the run is slower), and the process prints
// one line per (device, op) to stderr at exit: calls, total and mean time, share of the total.
// TROUPE_PROFILE_OPS=shapes keys the lines by the inputs' shapes too (one line per layer shape);
// any other value but 0 is warned about once and profiles nothing.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "core/device.h"
#include "core/tensor.h"

namespace troupe::internal {

bool OpProfileEnabled();
bool OpProfileByShape();  // TROUPE_PROFILE_OPS=shapes
// The op's name, followed by its inputs' shapes under TROUPE_PROFILE_OPS=shapes.
std::string OpProfileKey(std::string_view op, std::span<const Tensor> inputs);
void RecordOpTime(Device device, std::string_view op, double seconds);

}  // namespace troupe::internal
