#include "collectives/shm_segment.h"

#include "collectives/process_group.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace troupe {
namespace {

constexpr uint64_t kMagic = 0x5452555045534d31ull;  // "TRUPESM1"
constexpr size_t kPage = 4096;

size_t RoundUp(size_t x, size_t to) { return (x + to - 1) / to * to; }

void CpuRelax() {
#if defined(__x86_64__)
  _mm_pause();
#endif
}

long Futex(std::atomic<uint32_t>* addr, int op, uint32_t val, const timespec* timeout) {
  // Not FUTEX_PRIVATE_FLAG: waiters and wakers live in different processes.
  return syscall(SYS_futex, reinterpret_cast<uint32_t*>(addr), op, val, timeout, nullptr, 0);
}

std::string Errno(const std::string& what) { return what + ": " + std::strerror(errno); }

}  // namespace

struct ShmSegment::Control {
  uint64_t magic;
  int32_t local_size;
  int32_t num_slots;
  uint64_t slot_bytes;
  uint64_t heap_bytes;
  uint64_t eager_slot_bytes;
  std::atomic<int32_t> ready;
  std::atomic<int32_t> attached;
  alignas(64) std::atomic<uint32_t> wake_seq;  // bumped on arrivals while someone sleeps; futex
  std::atomic<int32_t> sleepers;
};

struct ShmSegment::RankArea {
  alignas(64) std::atomic<uint64_t> arrivals;
  int32_t pid;
  uint64_t start_time;
  alignas(64) OpHeader headers[2];  // by seq parity: a fast rank never overwrites one being read
  int64_t buffers[2][ShmSegment::kMaxPublished];  // heap offsets by seq parity
};

int NextSegmentSequence() {
  static std::atomic<int> next{0};
  return next.fetch_add(1);
}

uint64_t ProcessStartTime(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(in, line)) return 0;
  // Fields after the ")" that closes the command name: state is field 3, starttime field 22.
  const size_t close = line.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream fields(line.substr(close + 2));
  std::string field;
  char state = 0;
  for (int i = 3; i <= 22 && fields >> field; ++i) {
    if (i == 3) state = field[0];
    if (i == 22) return (state == 'Z' || state == 'X') ? 0 : std::stoull(field);
  }
  return 0;
}

ShmSegment::Control* ShmSegment::control() const { return static_cast<Control*>(base_); }

ShmSegment::RankArea* ShmSegment::area(int local_rank) const {
  return reinterpret_cast<RankArea*>(static_cast<char*>(base_) + RoundUp(sizeof(Control), 64) +
                                     static_cast<size_t>(local_rank) * sizeof(RankArea));
}

char* ShmSegment::heap(int local_rank) const {
  return static_cast<char*>(base_) + header_bytes_ + data_bytes() + eager_bytes() +
         static_cast<size_t>(local_rank) * params_.heap_bytes;
}

void ShmSegment::PublishBuffers(int64_t seq, const std::vector<int64_t>& offsets) {
  int64_t* dst = area(params_.local_rank)->buffers[seq & 1];
  for (int i = 0; i < kMaxPublished; ++i) {
    dst[i] = i < static_cast<int>(offsets.size()) ? offsets[i] : -1;
  }
}

std::vector<int64_t> ShmSegment::PublishedBuffers(int local_rank, int64_t seq, int count) const {
  const int64_t* src = area(local_rank)->buffers[seq & 1];
  std::vector<int64_t> out;
  for (int i = 0; i < count; ++i) out.push_back(i < kMaxPublished ? src[i] : -1);
  return out;
}

char* ShmSegment::slot(int i) const {
  return static_cast<char*>(base_) + header_bytes_ + static_cast<size_t>(i) * slot_bytes();
}

char* ShmSegment::eager_slot(int i) const {
  return static_cast<char*>(base_) + header_bytes_ + data_bytes() +
         static_cast<size_t>(i) * eager_slot_bytes();
}

Result<std::unique_ptr<ShmSegment>> ShmSegment::Join(Params params, Deadline deadline) {
  if (params.name.empty() || params.name[0] != '/' ||
      params.name.find('/', 1) != std::string::npos) {
    return InvalidArgumentError("shared-memory segment name '" + params.name +
                                "' must look like /name (one leading slash, no other)");
  }
  if (static_cast<int>(params.world_ranks.size()) != params.local_size) {
    return InvalidArgumentError("ShmSegment: world_ranks must list every local rank");
  }
  params.slot_bytes = RoundUp(std::max<size_t>(params.slot_bytes, kPage), kPage);
  params.heap_bytes = RoundUp(params.heap_bytes, kPage);
  params.eager_slot_bytes = RoundUp(params.eager_slot_bytes, kPage);
  std::unique_ptr<ShmSegment> seg(new ShmSegment(params));
  seg->header_bytes_ =
      RoundUp(RoundUp(sizeof(Control), 64) + sizeof(RankArea) * params.local_size, kPage);
  seg->map_bytes_ = seg->header_bytes_ + seg->data_bytes() + seg->eager_bytes() +
                    params.heap_bytes * static_cast<size_t>(params.local_size);
  const bool creator = params.local_rank == 0;
  TROUPE_ASSIGN_OR_RETURN(const int fd,
                          creator ? seg->CreateFile() : seg->OpenCreatedFile(deadline));
  TROUPE_RETURN_IF_ERROR(seg->Map(fd));
  TROUPE_RETURN_IF_ERROR(seg->InitOrCheckControl(deadline));
  TROUPE_RETURN_IF_ERROR(seg->AttachAndWait(deadline));
  return seg;
}

Result<int> ShmSegment::CreateFile() {
  const std::string& name = params_.name;
  int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0 && errno == EEXIST) {
    // Left over by a crashed run that used the same name; names carry a per-job token, so
    // nobody else can be using it.
    shm_unlink(name.c_str());
    fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  }
  if (fd < 0) return UnavailableError(Errno("shm_open(" + name + ") to create"));
  // Reserve the memory now (tmpfs is otherwise sparse: a full /dev/shm would surface later
  // as SIGBUS on first touch instead of as an error here).
  const int rc = posix_fallocate(fd, 0, static_cast<off_t>(map_bytes_));
  if (rc != 0) errno = rc;
  if (rc != 0 || ftruncate(fd, static_cast<off_t>(map_bytes_)) != 0) {
    const std::string err = Errno("reserving " + std::to_string(map_bytes_) + " bytes for " + name);
    close(fd);
    shm_unlink(name.c_str());
    return ResourceExhaustedError(err + "; is /dev/shm large enough?");
  }
  return fd;
}

Result<int> ShmSegment::OpenCreatedFile(Deadline deadline) {
  const std::string& name = params_.name;
  // The name appears first, then its size.
  for (;;) {
    const int fd = shm_open(name.c_str(), O_RDWR, 0600);
    if (fd >= 0) {
      struct stat st;
      if (fstat(fd, &st) == 0 && static_cast<size_t>(st.st_size) == map_bytes_) return fd;
      close(fd);
    } else if (errno != ENOENT) {
      return UnavailableError(Errno("shm_open(" + name + ")"));
    }
    if (CollectiveClock::now() > deadline) {
      return DeadlineExceededError("shared-memory segment " + name +
                                   " was not created by local rank 0 (world rank " +
                                   std::to_string(params_.world_ranks[0]) + ") in time");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

Status ShmSegment::Map(int fd) {
  void* p = mmap(nullptr, map_bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) {
    if (params_.local_rank == 0) shm_unlink(params_.name.c_str());
    return UnavailableError(Errno("mmap(" + params_.name + ")"));
  }
  base_ = p;
  return Status::OK();
}

Status ShmSegment::InitOrCheckControl(Deadline deadline) {
  Control* c = control();
  const Params& p = params_;
  if (p.local_rank == 0) {
    // The segment starts zero-filled: counters start at 0.
    c->magic = kMagic;
    c->local_size = p.local_size;
    c->num_slots = p.num_slots;
    c->slot_bytes = p.slot_bytes;
    c->heap_bytes = p.heap_bytes;
    c->eager_slot_bytes = p.eager_slot_bytes;
    c->ready.store(1, std::memory_order_release);
    return Status::OK();
  }
  while (c->ready.load(std::memory_order_acquire) != 1) {
    if (CollectiveClock::now() > deadline) {
      return DeadlineExceededError("shared-memory segment " + p.name + " never became ready");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (c->magic != kMagic || c->local_size != p.local_size || c->num_slots != p.num_slots ||
      c->slot_bytes != p.slot_bytes || c->heap_bytes != p.heap_bytes ||
      c->eager_slot_bytes != p.eager_slot_bytes) {
    return FailedPreconditionError(
        "shared-memory segment " + p.name + " was created with other parameters (local_size " +
        std::to_string(c->local_size) + ", slots " + std::to_string(c->num_slots) + "x" +
        std::to_string(c->slot_bytes) + " bytes); all local ranks must use the same options");
  }
  return Status::OK();
}

Status ShmSegment::AttachAndWait(Deadline deadline) {
  Control* c = control();
  const Params& p = params_;
  RankArea* mine = area(p.local_rank);
  mine->pid = static_cast<int32_t>(getpid());
  mine->start_time = ProcessStartTime(getpid());
  c->attached.fetch_add(1, std::memory_order_acq_rel);
  while (c->attached.load(std::memory_order_acquire) < p.local_size) {
    if (CollectiveClock::now() > deadline) {
      return DeadlineExceededError("only " + std::to_string(c->attached.load()) + " of " +
                                   std::to_string(p.local_size) +
                                   " local ranks attached to shared-memory segment " + p.name);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  // Everyone has it mapped: the name is no longer needed. Only the creator unlinks, so a slow
  // peer can never remove a newer segment that reuses the name.
  if (p.local_rank == 0) shm_unlink(p.name.c_str());
  // Peers in another pid namespace cannot be checked by pid; then only the deadline applies.
  for (int r = 0; r < p.local_size; ++r) {
    const RankArea* a = area(r);
    if (ProcessStartTime(a->pid) != a->start_time || a->start_time == 0) check_pids_ = false;
  }
  return Status::OK();
}

ShmSegment::~ShmSegment() {
  if (base_ != nullptr) munmap(base_, map_bytes_);
  if (params_.local_rank == 0) shm_unlink(params_.name.c_str());  // if a peer never attached
}

std::string ShmSegment::DeadPeers(const std::vector<int>& lagging) const {
  if (!check_pids_) return "";
  std::string dead;
  for (int r : lagging) {
    const RankArea* a = area(r);
    if (ProcessStartTime(a->pid) != a->start_time) {
      dead += (dead.empty() ? "" : ", ") + std::string("rank ") +
              std::to_string(params_.world_ranks[r]) + " (pid " + std::to_string(a->pid) + ")";
    }
  }
  return dead;
}

Status ShmSegment::WaitForAll(uint64_t target, Deadline deadline, const char* what) {
  Control* c = control();
  auto lagging = [&] {
    std::vector<int> out;
    for (int r = 0; r < params_.local_size; ++r) {
      if (area(r)->arrivals.load(std::memory_order_acquire) < target) out.push_back(r);
    }
    return out;
  };
  auto all_arrived = [&] {
    for (int r = 0; r < params_.local_size; ++r) {
      if (area(r)->arrivals.load(std::memory_order_acquire) < target) return false;
    }
    return true;
  };
  // Spin briefly (peers usually arrive within microseconds), then yield, then sleep on the
  // futex so oversubscribed hosts are not starved; check peers' pids while sleeping.
  for (int i = 0; i < 2000; ++i) {
    if (all_arrived()) return Status::OK();
    CpuRelax();
  }
  const auto spin_until = CollectiveClock::now() + std::chrono::microseconds(200);
  while (CollectiveClock::now() < spin_until) {
    if (all_arrived()) return Status::OK();
    sched_yield();
  }
  auto next_pid_check = CollectiveClock::now();
  for (;;) {
    const uint32_t seq = c->wake_seq.load(std::memory_order_acquire);
    if (all_arrived()) return Status::OK();
    const auto now = CollectiveClock::now();
    if (now >= next_pid_check) {
      std::string dead = DeadPeers(lagging());
      if (!dead.empty()) {
        return UnavailableError("shared-memory " + std::string(what) + ": peer " + dead +
                                " exited without arriving");
      }
      next_pid_check = now + std::chrono::milliseconds(20);
    }
    if (now >= deadline) {
      std::vector<int> late;
      for (int r : lagging()) late.push_back(params_.world_ranks[r]);
      return DeadlineExceededError("shared-memory " + std::string(what) +
                                   ": timed out waiting for " + DescribeRanks(late));
    }
    c->sleepers.fetch_add(1, std::memory_order_seq_cst);
    std::atomic_thread_fence(std::memory_order_seq_cst);  // pairs with ArriveAndWait's fence
    if (!all_arrived()) {
      timespec ts{0, 5'000'000};  // 5 ms: bounded so deadlines and pids get checked
      Futex(&c->wake_seq, FUTEX_WAIT, seq, &ts);
    }
    c->sleepers.fetch_sub(1, std::memory_order_acq_rel);
  }
}

Status ShmSegment::ArriveAndWait(Deadline deadline, const char* what) {
  ++arrivals_;
  area(params_.local_rank)->arrivals.store(arrivals_, std::memory_order_release);
  Control* c = control();
  // The arrival is visible before sleepers is read (a waiter bumps sleepers before its last
  // look at the arrivals), so the shared wake word is written only when someone sleeps: no
  // cache-line ping-pong between spinning ranks.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (c->sleepers.load(std::memory_order_seq_cst) > 0) {
    c->wake_seq.fetch_add(1, std::memory_order_acq_rel);
    Futex(&c->wake_seq, FUTEX_WAKE, INT32_MAX, nullptr);
  }
  return WaitForAll(arrivals_, deadline, what);
}

Status ShmSegment::ExchangeHeaders(const OpHeader& mine, Deadline deadline,
                                   std::vector<OpHeader>* all) {
  const int parity = static_cast<int>(mine.seq & 1);
  area(params_.local_rank)->headers[parity] = mine;
  TROUPE_RETURN_IF_ERROR(ArriveAndWait(deadline, "header exchange"));
  all->resize(static_cast<size_t>(params_.local_size));
  for (int r = 0; r < params_.local_size; ++r) (*all)[r] = area(r)->headers[parity];
  return Status::OK();
}

}  // namespace troupe
