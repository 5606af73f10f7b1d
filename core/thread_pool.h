// ThreadPool: a fixed set of worker threads. ParallelFor splits work into blocks that depend
// only on the problem size and the block size, never on how many threads are free, so kernels
// that reduce per block stay deterministic. An idle worker, and a caller waiting for the last
// block, spin briefly (TROUPE_POOL_SPIN_US, default 50 µs; 0 sleeps at once) before sleeping.
#pragma once

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
  void WorkerLoop();
  // True once work is queued, false after the spin time passed with none.
  bool SpinUntilQueued() const;

  std::string name_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  int sleepers_ = 0;                // workers blocked on cv_ (guarded by mu_)
  std::atomic<int64_t> queued_{0};  // queue_.size(), readable without mu_ while spinning
  std::vector<std::thread> workers_;
};

}  // namespace troupe
