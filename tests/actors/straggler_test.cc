// The coordinator's straggler watch (actors/straggler.cc) on hand-made heartbeat waits.
#include <gtest/gtest.h>

#include "actors/actors_internal.h"

namespace troupe::actors {
namespace {

// Ranks 0-3 on hosts a, a, b, c with the given recent allreduce waits (ms).
CoordinatorState State(double a, double b, double c) {
  CoordinatorState st;
  const char* hosts[] = {"a", "a", "b", "c"};
  const double waits[] = {a, a, b, c};
  for (int r = 0; r < 4; ++r) {
    CoordinatorState::Worker w;
    w.info.host = hosts[r];
    w.last_step = 10;
    w.wait_ms = waits[r];
    st.workers[r] = w;
  }
  return st;
}

std::string Note(CoordinatorShared& shared) {
  std::lock_guard<std::mutex> lock(shared.mu);
  return shared.straggler;
}

TEST(StragglerTest, NamesTheHostTheOthersWaitForOnceItStaysBehind) {
  CoordinatorState st = State(20, 1, 22);  // b waits least: a and c wait for it
  CoordinatorShared shared;
  for (int tick = 0; tick < 5; ++tick) WatchStragglers(st, shared);
  EXPECT_EQ(Note(shared), "") << "named after a moment, not only when consistently behind";
  WatchStragglers(st, shared);
  EXPECT_NE(Note(shared).find("slowest host b "), std::string::npos) << Note(shared);
  // b catches up: the note goes once the streak has run down.
  for (auto& [rank, w] : st.workers) w.wait_ms = 5;
  WatchStragglers(st, shared);
  EXPECT_NE(Note(shared), "") << "dropped at the first even tick";
  for (int tick = 0; tick < 5; ++tick) WatchStragglers(st, shared);
  EXPECT_EQ(Note(shared), "");
}

TEST(StragglerTest, EvenWaitsAndSmallGapsNameNoOne) {
  CoordinatorShared shared;
  CoordinatorState even = State(10, 9, 11);
  for (int tick = 0; tick < 20; ++tick) WatchStragglers(even, shared);
  EXPECT_EQ(Note(shared), "");
  CoordinatorState tiny = State(1.5, 0.1, 1.5);  // a large ratio, but under 2 ms apart
  for (int tick = 0; tick < 20; ++tick) WatchStragglers(tiny, shared);
  EXPECT_EQ(Note(shared), "");
}

TEST(StragglerTest, OneHostHasNoStraggler) {
  CoordinatorState st;
  for (int r = 0; r < 2; ++r) {
    st.workers[r].info.host = "a";
    st.workers[r].last_step = 10;
    st.workers[r].wait_ms = r == 0 ? 30 : 0;
  }
  CoordinatorShared shared;
  for (int tick = 0; tick < 20; ++tick) WatchStragglers(st, shared);
  EXPECT_EQ(Note(shared), "");
}

}  // namespace
}  // namespace troupe::actors
