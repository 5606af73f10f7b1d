// The launch flags every distributed subcommand accepts (--rank, --world-size, --local-rank,
// --coordinator), declared and read in one place.
#pragma once

#include "launch/environment.h"
#include "launch/flags.h"

namespace troupe::launch {

void AddLaunchFlags(FlagParser& parser);
Result<LaunchFlags> ReadLaunchFlags(const FlagParser& parser);

}  // namespace troupe::launch
