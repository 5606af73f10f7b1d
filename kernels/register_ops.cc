#include "kernels/register_ops.h"

namespace troupe {

void RegisterBuiltinOps(OpRegistry& registry) { RegisterArrayOps(registry); }

}  // namespace troupe
