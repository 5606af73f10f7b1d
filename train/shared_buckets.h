// Internal to train/: where the gradient buckets of a job on one host's shared-memory backend
// live. ShmCommunicator reduces tensors of its segment's heap in place (each segment's owner
// folds every process's bucket into every process's bucket, in replica-id order: the bits of
// the staged path without its copies), but the heap must be sized when the segment is made,
// and the buckets' size is known only once the model is built. So the buckets get a
// communicator of their own, made then.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "collectives/communicator.h"
#include "collectives/gradient_bucketer.h"
#include "collectives/job_processes.h"

namespace troupe::train {

struct BucketCommunicator {
  std::unique_ptr<Communicator> comm;  // null: the buckets stay with the job's communicator
  std::string placement;               // for the start-up line; empty when there is nothing to say
};

// Heap bytes that hold `replicas` copies of every bucket of `params`: their bytes plus one
// 64-byte rounding per parameter (a bucket holds at least one parameter).
size_t BucketHeapBytes(const std::vector<GradientBucketer::Param>& params, int replicas);

// A communicator whose segment holds `heap_bytes` per process for the buckets when `comm` is
// the shared-memory backend, the buckets are too large for its eager path, TROUPE_SHM_ZERO_COPY
// is not 0 and /dev/shm has room for every local process's heap. Every rank calls it; the room
// check is reduced over `comm`, so all ranks decide alike.
Result<BucketCommunicator> SharedBucketCommunicator(Communicator& comm, JobProcesses& processes,
                                                    const CollectiveOptions& options,
                                                    const std::string& job_token,
                                                    size_t heap_bytes);

}  // namespace troupe::train
