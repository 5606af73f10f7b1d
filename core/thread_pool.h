// ThreadPool: a fixed set of worker threads. ParallelFor splits work into blocks that depend
// only on the problem size and the block size, never on how many threads are free, so kernels
// that reduce per block stay deterministic. A ParallelFor call is posted once, in a slot that
// idle workers watch; each joins it and claims blocks from a shared counter, so a call costs
// the caller O(1) whatever the pool's size. An idle worker, and a caller waiting for the last
// block, spin briefly (TROUPE_POOL_SPIN_US, default 50 µs; 0 sleeps at once) before sleeping.
#pragma once

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace troupe {

class ThreadPool {
 public:
  // num_threads >= 0 workers besides the calling thread; with none, ParallelFor runs every
  // block on the caller and Schedule runs the task before returning.
  ThreadPool(int num_threads, std::string name);
  ~ThreadPool();  // finishes queued work, then joins
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const { return static_cast<int>(workers_.size()); }
  const std::string& name() const { return name_; }

  void Schedule(std::function<void()> task);

  // Runs fn(begin, end) over [0, n) in blocks of `block_size` (the last one may be shorter);
  // the caller works too and returns when every block is done.
  void ParallelFor(int64_t n, int64_t block_size,
                   const std::function<void(int64_t begin, int64_t end)>& fn);

  // The process's shared kernel pool: `SetDefaultThreads`' count when it was called before
  // the first use, else TROUPE_NUM_THREADS, else the hardware concurrency. The count includes
  // the calling thread, so the pool has one worker fewer.
  static ThreadPool* Default();
  // Sizes the default pool (threads >= 1, the caller included). False when the pool already
  // exists with another size: it is made once and never resized under running kernels.
  static bool SetDefaultThreads(int threads);
  // The thread count of the default pool, the caller included (makes the pool if needed).
  static int DefaultThreads() { return Default()->num_threads() + 1; }

 private:
  struct ForJob;
  // Posted ParallelFor calls: a job's address << 16 | flags and the count of workers that
  // joined it, 0 when free (see thread_pool.cc).
  static constexpr int kSlots = 32;

  void WorkerLoop(int index);
  // True once a queued task or an open job is there, false after the spin time passed.
  bool SpinUntilWork() const;
  bool HasWork() const;  // a queued task or an open job
  bool AnyOpenJob() const;
  // Joins one open job, starting the search at slot `start`, and runs blocks of it.
  bool JoinOpenJob(int start);
  int Post(ForJob* job);  // the slot taken, or -1 when all are busy
  void WakeSleepers(int64_t wanted);

  std::string name_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  std::atomic<int> sleepers_{0};    // workers blocked on cv_ (changed under mu_)
  std::atomic<int64_t> queued_{0};  // queue_.size(), readable without mu_ while spinning
  std::array<std::atomic<uint64_t>, kSlots> slots_{};
  std::atomic<int> slots_used_{0};  // 1 + the highest slot ever posted to
  std::vector<std::thread> workers_;
};

}  // namespace troupe
