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

ThreadPool::ThreadPool(int num_threads, std::string name) : name_(std::move(name)) {
  num_threads = std::max(0, num_threads);
  workers_.reserve(static_cast<size_t>(num_threads));
  for (int i = 0; i < num_threads; ++i) workers_.emplace_back([this] { WorkerLoop(); });
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
  bool wake = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(task));
    queued_.fetch_add(1, std::memory_order_release);
    wake = sleepers_ > 0;  // a spinning worker finds the task without a wake-up
  }
  if (wake) cv_.notify_one();
}

bool ThreadPool::SpinUntilQueued() const {
  return SpinFor([this] { return queued_.load(std::memory_order_acquire) > 0; });
}

void ThreadPool::WorkerLoop() {
  for (;;) {
    SpinUntilQueued();
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (queue_.empty() && !stopping_) {
        ++sleepers_;
        cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
        --sleepers_;
      }
      if (queue_.empty()) return;  // stopping and drained
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
  if (num_blocks == 1 || workers_.empty()) {
    for (int64_t begin = 0; begin < n; begin += block_size)
      fn(begin, std::min(n, begin + block_size));
    return;
  }
  // Blocks are claimed from a shared counter; which thread runs a block does not matter
  // because each block writes its own outputs.
  struct Shared {
    std::atomic<int64_t> next{0};
    std::atomic<int64_t> done{0};
    std::mutex mu;
    std::condition_variable cv;
  };
  auto shared = std::make_shared<Shared>();
  auto run_blocks = [shared, n, block_size, num_blocks, &fn] {
    for (;;) {
      int64_t b = shared->next.fetch_add(1);
      if (b >= num_blocks) return;
      int64_t begin = b * block_size;
      fn(begin, std::min(n, begin + block_size));
      if (shared->done.fetch_add(1) + 1 == num_blocks) {
        std::lock_guard<std::mutex> lock(shared->mu);
        shared->cv.notify_all();
      }
    }
  };
  const int64_t helpers = std::min<int64_t>(num_threads(), num_blocks - 1);
  for (int64_t i = 0; i < helpers; ++i) Schedule(run_blocks);
  run_blocks();
  if (SpinFor([&] { return shared->done.load() == num_blocks; })) return;
  std::unique_lock<std::mutex> lock(shared->mu);
  shared->cv.wait(lock, [&] { return shared->done.load() == num_blocks; });
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
