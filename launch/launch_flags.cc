#include "launch/launch_flags.h"

namespace troupe::launch {

void AddLaunchFlags(FlagParser& parser) {
  parser.AddFlag("rank", "N", "this process's rank (overrides detection; must agree with MPI)");
  parser.AddFlag("world-size", "N", "number of processes in the job");
  parser.AddFlag("local-rank", "N", "rank of this process on its host");
  parser.AddFlag("coordinator", "HOST:PORT", "address of the coordinator (rank 0)");
}

Result<LaunchFlags> ReadLaunchFlags(const FlagParser& parser) {
  LaunchFlags flags;
  for (auto [name, field] :
       {std::pair{"rank", &LaunchFlags::rank}, std::pair{"world-size", &LaunchFlags::world_size},
        std::pair{"local-rank", &LaunchFlags::local_rank}}) {
    if (parser.Has(name)) {
      TROUPE_ASSIGN_OR_RETURN(int64_t v, parser.GetInt(name));
      flags.*field = static_cast<int>(v);
    }
  }
  if (parser.Has("coordinator")) flags.coordinator = parser.Get("coordinator");
  return flags;
}

}  // namespace troupe::launch
