// Status: an error code from TensorFlow's canonical set plus a message, returned across module
// boundaries instead of exceptions. Status::OK() is cheap (no allocation).
#pragma once

#include <iosfwd>
#include <memory>
#include <string>
#include <string_view>

namespace troupe {

// Same numbering as tensorflow/absl canonical codes.
enum class StatusCode : int {
  kOk = 0,
  kCancelled = 1,
  kUnknown = 2,
  kInvalidArgument = 3,
  kDeadlineExceeded = 4,
  kNotFound = 5,
  kAlreadyExists = 6,
  kPermissionDenied = 7,
  kResourceExhausted = 8,
  kFailedPrecondition = 9,
  kAborted = 10,
  kOutOfRange = 11,
  kUnimplemented = 12,
  kInternal = 13,
  kUnavailable = 14,
  kDataLoss = 15,
  kUnauthenticated = 16,
};

std::string_view StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message);

  static Status OK() { return Status(); }

  bool ok() const { return state_ == nullptr; }
  StatusCode code() const { return ok() ? StatusCode::kOk : state_->code; }
  const std::string& message() const;
  // "InvalidArgument: message", or "OK".
  std::string ToString() const;

  // Returns a copy whose message is "context: original message".
  Status WithContext(std::string_view context) const;

  bool operator==(const Status& other) const {
    return code() == other.code() && message() == other.message();
  }

 private:
  struct State {
    StatusCode code;
    std::string message;
  };
  std::shared_ptr<const State> state_;  // null when OK
};

std::ostream& operator<<(std::ostream& os, const Status& s);

// Factory helpers, one per canonical code the project uses.
Status CancelledError(std::string message);
Status UnknownError(std::string message);
Status InvalidArgumentError(std::string message);
Status DeadlineExceededError(std::string message);
Status NotFoundError(std::string message);
Status AlreadyExistsError(std::string message);
Status PermissionDeniedError(std::string message);
Status ResourceExhaustedError(std::string message);
Status FailedPreconditionError(std::string message);
Status AbortedError(std::string message);
Status OutOfRangeError(std::string message);
Status UnimplementedError(std::string message);
Status InternalError(std::string message);
Status UnavailableError(std::string message);
Status DataLossError(std::string message);

}  // namespace troupe

#define TROUPE_STATUS_CONCAT_INNER(a, b) a##b
#define TROUPE_STATUS_CONCAT(a, b) TROUPE_STATUS_CONCAT_INNER(a, b)

// Returns from the enclosing function if `expr` (a Status) is not OK.
#define TROUPE_RETURN_IF_ERROR(expr)                 \
  do {                                               \
    ::troupe::Status _troupe_status = (expr);        \
    if (!_troupe_status.ok()) return _troupe_status; \
  } while (0)
