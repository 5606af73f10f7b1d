#include "core/logging.h"

#include <gtest/gtest.h>

#include <vector>

namespace troupe {
namespace {

TEST(LoggingTest, SinkCapturesAndLevelFilters) {
  std::vector<std::string> seen;
  LogSink previous = SetLogSink([&](LogLevel level, std::string_view msg) {
    seen.push_back(std::to_string(static_cast<int>(level)) + ":" + std::string(msg));
  });
  LogLevel old = MinLogLevel();
  SetMinLogLevel(LogLevel::kWarning);
  TROUPE_LOG(INFO) << "dropped";
  TROUPE_LOG(WARNING) << "kept " << 42;
  SetMinLogLevel(old);
  SetLogSink(previous);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0], "2:kept 42");
}

TEST(LoggingDeathTest, CheckAborts) {
  EXPECT_DEATH({ TROUPE_CHECK(1 + 1 == 3) << "math"; }, "Check failed: 1 \\+ 1 == 3 math");
}

}  // namespace
}  // namespace troupe
