// Internal to launch/: every key of `troupe train`'s config (config_schema.h's ConfigSchema()
// reads it once).
#pragma once

#include <vector>

#include "launch/config_schema.h"

namespace troupe::launch {

// The keys in listing order: [job], [model], [data], [train], [optimizer], [checkpoint],
// [collectives], [control].
std::vector<ConfigKey> BuildConfigSchema();

}  // namespace troupe::launch
