// Internal to launch/: every key of `troupe train`'s config (config_schema.h's ConfigSchema()
// reads it, and again when a program registers a component with keys of its own).
#pragma once

#include <vector>

#include "launch/config_schema.h"

namespace troupe::launch {

// The keys in listing order: [job], [model], [data], [train], [optimizer], [checkpoint],
// [collectives], [control].
std::vector<ConfigKey> BuildConfigSchema();
// How many components (data sources, optimizers) with keys of their own are registered: the
// schema is built again when it grows.
size_t RegisteredComponents();

}  // namespace troupe::launch
