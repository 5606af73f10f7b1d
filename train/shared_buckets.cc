#include "train/shared_buckets.h"

#include <sys/statvfs.h>

#include <cstdlib>
#include <string_view>

#include "collectives/shm_communicator.h"
#include "train/internal/trainer_setup.h"

namespace troupe::train {
namespace {

constexpr const char* kShmDir = "/dev/shm";

// Free bytes of the file system POSIX shared memory lives on (0 when it cannot be read).
uint64_t ShmFreeBytes() {
  struct statvfs fs {};
  if (statvfs(kShmDir, &fs) != 0) return 0;
  return static_cast<uint64_t>(fs.f_bavail) * fs.f_frsize;
}

std::string MiB(uint64_t bytes) { return std::to_string((bytes + (1 << 20) - 1) >> 20) + " MiB"; }

}  // namespace

size_t BucketHeapBytes(const std::vector<GradientBucketer::Param>& params, int replicas) {
  size_t bytes = 0;
  for (const GradientBucketer::Param& p : params) {
    bytes += static_cast<size_t>(p.shape.num_elements()) * DTypeSize(p.dtype) + 64;
  }
  return bytes * static_cast<size_t>(replicas);
}

Result<BucketCommunicator> SharedBucketCommunicator(Communicator& comm, JobProcesses& processes,
                                                    const CollectiveOptions& options,
                                                    const std::string& job_token,
                                                    size_t heap_bytes) {
  BucketCommunicator out;
  // Buckets up to kEagerBytes take the eager path (one barrier) wherever they live.
  const size_t per_replica = heap_bytes / static_cast<size_t>(comm.group().num_local_replicas());
  if (comm.backend() != "shm" || per_replica <= ShmCommunicator::kEagerBytes) return out;
  const char* env = std::getenv("TROUPE_SHM_ZERO_COPY");
  const bool enabled = env == nullptr || std::string_view(env) != "0";
  // The segment holds every local process's heap besides its staging slots (a few MiB).
  const uint64_t need = static_cast<uint64_t>(comm.group().local_size) * heap_bytes + (64 << 20);
  const uint64_t free_bytes = ShmFreeBytes();
  const bool room = free_bytes >= need;
  TROUPE_ASSIGN_OR_RETURN(const int64_t everyone, MinOverJob(comm, enabled && room ? 1 : 0));
  if (everyone == 0) {
    if (!enabled) {
      out.placement = "gradient buckets staged (TROUPE_SHM_ZERO_COPY=0)";
    } else if (!room) {
      out.placement = "gradient buckets staged: " + std::string(kShmDir) + " has " +
                      MiB(free_bytes) + " free where " + MiB(need) +
                      " would let them be reduced in place (docker: --shm-size)";
    } else {
      out.placement =
          "gradient buckets staged (another process of this host stages them: "
          "TROUPE_SHM_ZERO_COPY=0 there, or no room in " +
          std::string(kShmDir) + ")";
    }
    return out;
  }
  CollectiveOptions o = options;
  o.shm_heap_bytes = heap_bytes;
  TROUPE_ASSIGN_OR_RETURN(
      out.comm, processes.CreateCommunicator("auto", comm.group(), o, job_token, Device::Cpu()));
  out.placement = "gradient buckets in shared memory (" + MiB(heap_bytes) +
                  " per process), those over 256 KiB reduced in place";
  return out;
}

}  // namespace troupe::train
