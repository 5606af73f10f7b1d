// ShmSegment: a POSIX shared-memory segment joined by the processes of one host, with
// per-process arrival counters (a barrier that waits with a deadline and notices dead peers by
// pid) and data slots for staging. Local rank 0 creates it, the others open it, and once all
// have attached rank 0 unlinks the name, so a crash never leaves anything in /dev/shm.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "collectives/op_header.h"
#include "collectives/work.h"
#include "core/result.h"

namespace troupe {

class ShmSegment {
 public:
  struct Params {
    std::string name;  // "/troupe-<job token>-h<host>"; unique per job and host
    int local_rank = 0;
    int local_size = 1;
    int num_slots = 1;             // data slots
    size_t slot_bytes = 0;         // rounded up to 4 KiB
    size_t heap_bytes = 0;         // per local rank, for shared tensors (rounded to 4 KiB)
    size_t eager_slot_bytes = 0;   // num_slots more slots of this size (rounded to 4 KiB; 0 = none)
    std::vector<int> world_ranks;  // world rank of each local rank, for messages
  };
  static constexpr int kMaxPublished = 16;  // buffers a rank can publish per operation
  // Creates (local rank 0) or opens the segment and waits for all local ranks to attach.
  static Result<std::unique_ptr<ShmSegment>> Join(Params params, Deadline deadline);
  ~ShmSegment();
  ShmSegment(const ShmSegment&) = delete;
  ShmSegment& operator=(const ShmSegment&) = delete;

  int local_rank() const { return params_.local_rank; }
  int local_size() const { return params_.local_size; }
  size_t slot_bytes() const { return params_.slot_bytes; }
  int num_slots() const { return params_.num_slots; }
  char* slot(int i) const;  // i in [0, num_slots); consecutive slots are contiguous
  size_t data_bytes() const { return static_cast<size_t>(params_.num_slots) * slot_bytes(); }
  // The eager area: num_slots slots of eager_slot_bytes() each, after the data slots, for
  // messages staged before the header exchange (see ShmCommunicator).
  size_t eager_slot_bytes() const { return params_.eager_slot_bytes; }
  char* eager_slot(int i) const;
  // Local rank r's heap: heap_bytes() bytes every process of the host can address.
  char* heap(int local_rank) const;
  size_t heap_bytes() const { return params_.heap_bytes; }

  // Publishes where this rank's buffers of operation `seq` live (offsets into its heap, -1 when
  // a buffer is not in it); visible to peers after the next barrier step, until seq + 2.
  void PublishBuffers(int64_t seq, const std::vector<int64_t>& offsets);
  // What `local_rank` published for `seq` (count entries).
  std::vector<int64_t> PublishedBuffers(int local_rank, int64_t seq, int count) const;

  // Barrier step: publishes this rank's arrival, then waits until every local rank has arrived
  // as often. Fails with Unavailable when a peer process died, DeadlineExceeded when a peer
  // did not arrive by `deadline`; both name the world rank(s).
  Status ArriveAndWait(Deadline deadline, const char* what);
  // Header exchange riding on one barrier step; (*all)[local rank] = that rank's header.
  Status ExchangeHeaders(const OpHeader& mine, Deadline deadline, std::vector<OpHeader>* all);

 private:
  struct Control;
  struct RankArea;
  explicit ShmSegment(Params params) : params_(std::move(params)) {}
  Control* control() const;
  size_t eager_bytes() const { return static_cast<size_t>(params_.num_slots) * eager_slot_bytes(); }
  RankArea* area(int local_rank) const;
  // Join's steps: rank 0 creates and sizes the file, the others wait for it; everyone maps it;
  // rank 0 writes the control block, the others check it against their options; everyone
  // registers and waits for the rest.
  Result<int> CreateFile();
  Result<int> OpenCreatedFile(Deadline deadline);
  Status Map(int fd);
  Status InitOrCheckControl(Deadline deadline);
  Status AttachAndWait(Deadline deadline);
  Status WaitForAll(uint64_t target, Deadline deadline, const char* what);
  // Empty when all `lagging` peers live; else "rank 2 (pid 123) exited".
  std::string DeadPeers(const std::vector<int>& lagging) const;

  Params params_;
  void* base_ = nullptr;
  size_t map_bytes_ = 0;
  size_t header_bytes_ = 0;
  uint64_t arrivals_ = 0;  // this rank's count
  bool check_pids_ = true;
};

// A process-wide sequence number for segment names: communicators are created collectively,
// in the same order on every rank, so the k-th one gets the same name everywhere ("-s<k>")
// and two communicators of one job never share a segment.
int NextSegmentSequence();

// Reads the process start time (field 22 of /proc/<pid>/stat); 0 when gone or a zombie.
uint64_t ProcessStartTime(int pid);

}  // namespace troupe
