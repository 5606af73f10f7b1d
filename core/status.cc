#include "core/status.h"

#include <ostream>

namespace troupe {

std::string_view StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "OK";
    case StatusCode::kCancelled:
      return "Cancelled";
    case StatusCode::kUnknown:
      return "Unknown";
    case StatusCode::kInvalidArgument:
      return "InvalidArgument";
    case StatusCode::kDeadlineExceeded:
      return "DeadlineExceeded";
    case StatusCode::kNotFound:
      return "NotFound";
    case StatusCode::kAlreadyExists:
      return "AlreadyExists";
    case StatusCode::kPermissionDenied:
      return "PermissionDenied";
    case StatusCode::kResourceExhausted:
      return "ResourceExhausted";
    case StatusCode::kFailedPrecondition:
      return "FailedPrecondition";
    case StatusCode::kAborted:
      return "Aborted";
    case StatusCode::kOutOfRange:
      return "OutOfRange";
    case StatusCode::kUnimplemented:
      return "Unimplemented";
    case StatusCode::kInternal:
      return "Internal";
    case StatusCode::kUnavailable:
      return "Unavailable";
    case StatusCode::kDataLoss:
      return "DataLoss";
    case StatusCode::kUnauthenticated:
      return "Unauthenticated";
  }
  return "Unknown";
}

Status::Status(StatusCode code, std::string message) {
  if (code != StatusCode::kOk) {
    state_ = std::make_shared<const State>(State{code, std::move(message)});
  }
}

const std::string& Status::message() const {
  static const std::string kEmpty;
  return ok() ? kEmpty : state_->message;
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  std::string out(StatusCodeName(code()));
  out += ": ";
  out += state_->message;
  return out;
}

Status Status::WithContext(std::string_view context) const {
  if (ok()) return *this;
  std::string msg(context);
  msg += ": ";
  msg += state_->message;
  return Status(code(), std::move(msg));
}

std::ostream& operator<<(std::ostream& os, const Status& s) { return os << s.ToString(); }

#define TROUPE_DEFINE_ERROR(Fn, Code) \
  Status Fn(std::string message) { return Status(StatusCode::Code, std::move(message)); }
TROUPE_DEFINE_ERROR(CancelledError, kCancelled)
TROUPE_DEFINE_ERROR(UnknownError, kUnknown)
TROUPE_DEFINE_ERROR(InvalidArgumentError, kInvalidArgument)
TROUPE_DEFINE_ERROR(DeadlineExceededError, kDeadlineExceeded)
TROUPE_DEFINE_ERROR(NotFoundError, kNotFound)
TROUPE_DEFINE_ERROR(AlreadyExistsError, kAlreadyExists)
TROUPE_DEFINE_ERROR(PermissionDeniedError, kPermissionDenied)
TROUPE_DEFINE_ERROR(ResourceExhaustedError, kResourceExhausted)
TROUPE_DEFINE_ERROR(FailedPreconditionError, kFailedPrecondition)
TROUPE_DEFINE_ERROR(AbortedError, kAborted)
TROUPE_DEFINE_ERROR(OutOfRangeError, kOutOfRange)
TROUPE_DEFINE_ERROR(UnimplementedError, kUnimplemented)
TROUPE_DEFINE_ERROR(InternalError, kInternal)
TROUPE_DEFINE_ERROR(UnavailableError, kUnavailable)
TROUPE_DEFINE_ERROR(DataLossError, kDataLoss)
#undef TROUPE_DEFINE_ERROR

}  // namespace troupe
