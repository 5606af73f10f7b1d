#include "core/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <memory>

namespace troupe {

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
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(task));
  }
  cv_.notify_one();
}

void ThreadPool::WorkerLoop() {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping and drained
      task = std::move(queue_.front());
      queue_.pop_front();
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
