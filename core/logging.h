// Leveled logging to stderr: TROUPE_LOG(INFO) << "..."; the minimum level comes from
// TROUPE_LOG_LEVEL (debug|info|warning|error) or SetMinLogLevel. A sink can capture messages
// (tests use it to observe warnings). TROUPE_CHECK is for broken internal invariants only;
// bad input is reported with a Status, never a CHECK.
#pragma once

#include <functional>
#include <sstream>
#include <string>
#include <string_view>

namespace troupe {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3, kFatal = 4 };

void SetMinLogLevel(LogLevel level);
LogLevel MinLogLevel();
// Replaces the stderr writer; pass nullptr to restore it. Returns the previous sink.
using LogSink = std::function<void(LogLevel, std::string_view message)>;
LogSink SetLogSink(LogSink sink);

namespace internal {
class LogMessage {
 public:
  LogMessage(const char* file, int line, LogLevel level);
  ~LogMessage();  // emits; aborts for kFatal
  std::ostream& stream() { return stream_; }

 private:
  const char* file_;
  int line_;
  LogLevel level_;
  std::ostringstream stream_;
};
}  // namespace internal

}  // namespace troupe

#define TROUPE_LOG_LEVEL_DEBUG ::troupe::LogLevel::kDebug
#define TROUPE_LOG_LEVEL_INFO ::troupe::LogLevel::kInfo
#define TROUPE_LOG_LEVEL_WARNING ::troupe::LogLevel::kWarning
#define TROUPE_LOG_LEVEL_ERROR ::troupe::LogLevel::kError
#define TROUPE_LOG_LEVEL_FATAL ::troupe::LogLevel::kFatal

#define TROUPE_LOG(level)                                   \
  if (TROUPE_LOG_LEVEL_##level < ::troupe::MinLogLevel()) { \
  } else                                                    \
    ::troupe::internal::LogMessage(__FILE__, __LINE__, TROUPE_LOG_LEVEL_##level).stream()

#define TROUPE_CHECK(cond)                                                                  \
  if (cond) {                                                                               \
  } else                                                                                    \
    ::troupe::internal::LogMessage(__FILE__, __LINE__, ::troupe::LogLevel::kFatal).stream() \
        << "Check failed: " #cond " "
