// Per-op timing for finding hot spots: with TROUPE_PROFILE_OPS=1 in the environment the
// executor times every kernel step (on a GPU it waits for the device before and after the
// kernel, so the times are the kernels' own, and the run is slower), and the process prints
// one line per (device, op) to stderr at exit: calls, total and mean time, share of the total.
#pragma once

#include <string_view>

#include "core/device.h"

namespace troupe::internal {

bool OpProfileEnabled();
void RecordOpTime(Device device, std::string_view op, double seconds);

}  // namespace troupe::internal
