#include "core/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <memory>

namespace troupe {
namespace {

// How long idle threads poll before a futex sleep. Kernels' ParallelFor calls usually follow
// one another within microseconds, and a sleep/wake pair costs about as much as a small
// kernel; past this the thread sleeps, so a pool that is really idle costs nothing.
std::chrono::microseconds SpinTime() {
  static const std::chrono::microseconds spin = [] {
    const char* env = std::getenv("TROUPE_POOL_SPIN_US");
    return std::chrono::microseconds(env != nullptr ? std::max(0, std::atoi(env)) : 50);
  }();
  return spin;
}

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// Polls `ready` until it holds or the spin time has passed; true when it holds.
template <typename Ready>
bool SpinFor(Ready ready) {
  const auto spin = SpinTime();
  if (spin.count() == 0) return ready();
  const auto deadline = std::chrono::steady_clock::now() + spin;
  for (int i = 1;; ++i) {
    if (ready()) return true;
    CpuRelax();
    if (i % 64 == 0 && std::chrono::steady_clock::now() > deadline) return ready();
  }
}

}  // namespace

// A posted ParallelFor call. Its slot word is (address << 16) | kExhausted? | joins: a worker
// joins with a CAS that adds 1 to `joins` (so it cannot join a job whose slot was cleared), and
// each join holds one reference. The slot's own reference is kBias; when the caller clears the
// slot it learns how many joined and gives back kBias - joins, leaving exactly the joiners'
// references. Whoever drops the last one deletes the job, so no worker touches freed memory.
struct ThreadPool::ForJob {
  static constexpr int64_t kBias = int64_t{1} << 20;

  ForJob(int64_t n, int64_t block_size, const std::function<void(int64_t, int64_t)>& fn)
      : fn(fn), n(n), block_size(block_size), num_blocks((n + block_size - 1) / block_size) {}

  // Claims and runs blocks until none is left; which thread runs a block does not matter
  // because each block writes its own outputs.
  void RunBlocks() {
    for (;;) {
      const int64_t b = next.fetch_add(1, std::memory_order_relaxed);
      if (b >= num_blocks) return;
      const int64_t begin = b * block_size;
      fn(begin, std::min(n, begin + block_size));
      if (done.fetch_add(1, std::memory_order_acq_rel) + 1 == num_blocks) {
        std::lock_guard<std::mutex> lock(mu);
        cv.notify_all();
      }
    }
  }
  bool Finished() const { return done.load(std::memory_order_acquire) == num_blocks; }
  void Release(int64_t refs_given) {
    if (refs.fetch_sub(refs_given, std::memory_order_acq_rel) == refs_given) delete this;
  }

  const std::function<void(int64_t, int64_t)>& fn;  // valid until the last block is done
  const int64_t n, block_size, num_blocks;
  std::atomic<int64_t> next{0};
  std::atomic<int64_t> done{0};
  std::atomic<int64_t> refs{kBias + 1};  // the slot's bias and the caller's own
  std::mutex mu;                         // for a caller that sleeps until the last block
  std::condition_variable cv;
};

namespace {

constexpr uint64_t kJoinMask = 0x7fff;   // workers that joined, in the slot word's low bits
constexpr uint64_t kExhausted = 0x8000;  // every block is claimed: not worth joining
constexpr uint64_t kMaxAddress = uint64_t{1} << 47;  // x86-64/AArch64 user space

template <typename Job>
Job* JobOf(uint64_t word) {
  return reinterpret_cast<Job*>(word >> 16);
}
bool Open(uint64_t word) {
  return word != 0 && (word & kExhausted) == 0 && (word & kJoinMask) != kJoinMask;
}

}  // namespace

ThreadPool::ThreadPool(int num_threads, std::string name) : name_(std::move(name)) {
  num_threads = std::max(0, num_threads);
  workers_.reserve(static_cast<size_t>(num_threads));
  for (int i = 0; i < num_threads; ++i) workers_.emplace_back([this, i] { WorkerLoop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::Schedule(std::function<void()> task) {
  if (workers_.empty()) {
    task();
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(task));
    queued_.fetch_add(1);
  }
  WakeSleepers(1);  // a spinning worker finds the task without a wake-up
}

void ThreadPool::WakeSleepers(int64_t wanted) {
  // Pairs with the sleeper's increment of sleepers_ before it checks for work (both seq_cst):
  // either it sees the posted work or this sees it asleep.
  const int sleepers = sleepers_.load();
  if (sleepers == 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (wanted >= sleepers) {
    cv_.notify_all();
  } else {
    for (int64_t i = 0; i < wanted; ++i) cv_.notify_one();
  }
}

bool ThreadPool::AnyOpenJob() const {
  const int used = slots_used_.load();
  for (int i = 0; i < used; ++i) {
    if (Open(slots_[static_cast<size_t>(i)].load())) return true;
  }
  return false;
}

bool ThreadPool::HasWork() const { return queued_.load() > 0 || AnyOpenJob(); }

bool ThreadPool::SpinUntilWork() const {
  return SpinFor([this] { return HasWork(); });
}

int ThreadPool::Post(ForJob* job) {
  const auto address = reinterpret_cast<uint64_t>(job);
  if (address >= kMaxAddress) return -1;
  for (int i = 0; i < kSlots; ++i) {
    uint64_t expected = 0;
    if (slots_[static_cast<size_t>(i)].compare_exchange_strong(expected, address << 16)) {
      int used = slots_used_.load();
      while (used < i + 1 && !slots_used_.compare_exchange_weak(used, i + 1)) {
      }
      return i;
    }
  }
  return -1;
}

bool ThreadPool::JoinOpenJob(int start) {
  const int used = slots_used_.load();
  for (int k = 0; k < used; ++k) {
    std::atomic<uint64_t>& slot = slots_[static_cast<size_t>((start + k) % used)];
    uint64_t word = slot.load();
    while (Open(word) && !slot.compare_exchange_weak(word, word + 1)) {
    }
    if (!Open(word)) continue;
    // Joined: this worker holds a reference until Release.
    ForJob* job = JobOf<ForJob>(word);
    job->RunBlocks();
    // Every block is claimed; spare the other workers a join that finds nothing.
    uint64_t now = slot.load();
    while (JobOf<ForJob>(now) == job && (now & kExhausted) == 0 &&
           !slot.compare_exchange_weak(now, now | kExhausted)) {
    }
    job->Release(1);
    return true;
  }
  return false;
}

void ThreadPool::WorkerLoop(int index) {
  for (;;) {
    if (JoinOpenJob(index)) continue;
    if (queued_.load() == 0) {
      if (SpinUntilWork()) continue;
      std::unique_lock<std::mutex> lock(mu_);
      sleepers_.fetch_add(1);
      cv_.wait(lock, [this] { return stopping_ || !queue_.empty() || AnyOpenJob(); });
      sleepers_.fetch_sub(1);
      if (stopping_ && queue_.empty()) return;
      continue;
    }
    std::function<void()> task;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (queue_.empty()) continue;  // another worker took it
      task = std::move(queue_.front());
      queue_.pop_front();
      queued_.fetch_sub(1, std::memory_order_relaxed);
    }
    task();
  }
}

void ThreadPool::ParallelFor(int64_t n, int64_t block_size,
                             const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  block_size = std::max<int64_t>(1, block_size);
  const int64_t num_blocks = (n + block_size - 1) / block_size;
  auto* job = num_blocks == 1 || workers_.empty() ? nullptr : new ForJob(n, block_size, fn);
  const int slot = job != nullptr ? Post(job) : -1;
  if (slot < 0) {  // one block, no workers, or every slot busy: the caller runs them all
    delete job;
    for (int64_t begin = 0; begin < n; begin += block_size)
      fn(begin, std::min(n, begin + block_size));
    return;
  }
  WakeSleepers(std::min<int64_t>(num_threads(), num_blocks - 1));
  job->RunBlocks();
  // Close the slot: no worker joins from here on, and the slot's bias becomes the joiners'.
  const uint64_t last = slots_[static_cast<size_t>(slot)].exchange(0);
  job->Release(ForJob::kBias - static_cast<int64_t>(last & kJoinMask));
  if (!SpinFor([&] { return job->Finished(); })) {
    std::unique_lock<std::mutex> lock(job->mu);
    job->cv.wait(lock, [&] { return job->Finished(); });
  }
  job->Release(1);
}

namespace {
std::atomic<int> requested_default_threads{0};
}  // namespace

ThreadPool* ThreadPool::Default() {
  static ThreadPool* pool = [] {
    int n = requested_default_threads.load();
    if (n <= 0) {
      n = static_cast<int>(std::thread::hardware_concurrency());
      if (const char* env = std::getenv("TROUPE_NUM_THREADS")) n = std::atoi(env);
    }
    // The caller participates in ParallelFor, so n-1 workers keep n cores busy.
    return new ThreadPool(std::max(0, n - 1), "troupe-default");
  }();
  return pool;
}

bool ThreadPool::SetDefaultThreads(int threads) {
  threads = std::max(1, threads);
  requested_default_threads.store(threads);
  return DefaultThreads() == threads;
}

}  // namespace troupe
