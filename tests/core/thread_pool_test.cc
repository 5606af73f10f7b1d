#include "core/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

namespace troupe {
namespace {

TEST(ThreadPoolTest, ParallelForCoversEveryIndexOnce) {
  ThreadPool pool(3, "test");
  std::vector<std::atomic<int>> hits(1001);
  pool.ParallelFor(1001, 64, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)]++;
  });
  for (auto& h : hits) EXPECT_EQ(h.load(), 1);
}

TEST(ThreadPoolTest, BlocksDependOnlyOnSizes) {
  // Block boundaries are the same whatever the thread count: the determinism contract.
  auto blocks = [](int threads) {
    ThreadPool pool(threads, "t");
    std::mutex mu;
    std::set<std::pair<int64_t, int64_t>> out;
    pool.ParallelFor(100, 7, [&](int64_t b, int64_t e) {
      std::lock_guard<std::mutex> lock(mu);
      out.insert({b, e});
    });
    return out;
  };
  EXPECT_EQ(blocks(1), blocks(4));
  EXPECT_EQ(blocks(0), blocks(4));
  EXPECT_EQ(blocks(1).size(), 15u);
}

TEST(ThreadPoolTest, NoWorkersRunsEverythingOnTheCaller) {
  ThreadPool pool(0, "inline");
  EXPECT_EQ(pool.num_threads(), 0);
  const std::thread::id caller = std::this_thread::get_id();
  std::atomic<int> elsewhere{0};
  std::atomic<int64_t> covered{0};
  pool.ParallelFor(100, 7, [&](int64_t b, int64_t e) {
    if (std::this_thread::get_id() != caller) elsewhere++;
    covered += e - b;
  });
  bool ran = false;
  pool.Schedule([&] { ran = std::this_thread::get_id() == caller; });
  EXPECT_EQ(elsewhere.load(), 0);
  EXPECT_EQ(covered.load(), 100);
  EXPECT_TRUE(ran);  // before Schedule returned, on the caller
}

TEST(ThreadPoolTest, ScheduleRunsBeforeDestruction) {
  std::atomic<int> n{0};
  {
    ThreadPool pool(2, "t");
    for (int i = 0; i < 100; ++i) pool.Schedule([&] { n++; });
  }
  EXPECT_EQ(n.load(), 100);
}

// Workers spin a while after their last task and then sleep: work must reach them in both
// states (a lost wake-up would leave the task queued forever).
TEST(ThreadPoolTest, TasksReachSpinningAndSleepingWorkers) {
  ThreadPool pool(2, "t");
  for (int round = 0; round < 40; ++round) {
    // Alternate: right after the last task (workers spinning) and after they went to sleep.
    if (round % 2 == 1) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    std::promise<std::thread::id> ran;
    auto done = ran.get_future();
    pool.Schedule([&] { ran.set_value(std::this_thread::get_id()); });
    ASSERT_EQ(done.wait_for(std::chrono::seconds(20)), std::future_status::ready) << round;
    EXPECT_NE(done.get(), std::this_thread::get_id());
    std::atomic<int64_t> covered{0};
    pool.ParallelFor(1000, 10, [&](int64_t b, int64_t e) { covered += e - b; });
    EXPECT_EQ(covered.load(), 1000);
  }
}

// Replicas share one pool: ParallelFor calls from several threads at once, some of them from
// inside another call's blocks, must each cover their range exactly once and all return.
TEST(ThreadPoolTest, ConcurrentAndNestedCallsEachCoverTheirRange) {
  ThreadPool pool(5, "t");
  constexpr int kCallers = 6;
  std::vector<std::thread> callers;
  std::atomic<int> bad{0};
  for (int c = 0; c < kCallers; ++c) {
    callers.emplace_back([&, c] {
      for (int round = 0; round < 300; ++round) {
        const int64_t n = 1 + (round * 37 + c * 11) % 97;
        std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
        pool.ParallelFor(n, 1 + round % 5, [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) {
            if (round % 3 == 0) {  // a nested call from inside a block
              std::atomic<int64_t> inner{0};
              pool.ParallelFor(8, 1, [&](int64_t ib, int64_t ie) { inner += ie - ib; });
              if (inner.load() != 8) bad++;
            }
            hits[static_cast<size_t>(i)]++;
          }
        });
        for (auto& h : hits) {
          if (h.load() != 1) bad++;
        }
        if (round % 50 == 0) std::this_thread::sleep_for(std::chrono::microseconds(200));
      }
    });
  }
  for (auto& t : callers) t.join();
  EXPECT_EQ(bad.load(), 0);
}

// More concurrent calls than the pool has slots to post them in: the rest run on their callers.
TEST(ThreadPoolTest, CallsBeyondThePostingSlotsRunOnTheirCallers) {
  ThreadPool pool(2, "t");
  constexpr int kCallers = 40;
  std::atomic<int> inside{0};
  std::atomic<int> release{0};
  std::atomic<int64_t> covered{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < kCallers; ++c) {
    callers.emplace_back([&] {
      pool.ParallelFor(4, 1, [&](int64_t b, int64_t e) {
        if (b == 0) {  // hold the call open until every caller is inside its own
          inside++;
          while (inside.load() < kCallers && release.load() == 0) std::this_thread::yield();
          release = 1;
        }
        covered += e - b;
      });
    });
  }
  for (auto& t : callers) t.join();
  EXPECT_EQ(covered.load(), 4 * kCallers);
}

}  // namespace
}  // namespace troupe
