// Result<T>: either a value or a non-OK Status. Every fallible constructor or lookup across a
// module boundary returns one; nothing throws.
#pragma once

#include <cassert>
#include <type_traits>
#include <utility>
#include <variant>

#include "core/status.h"

namespace troupe {

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : data_(std::in_place_index<0>, std::move(value)) {}        // NOLINT: implicit
  Result(Status status) : data_(std::in_place_index<1>, std::move(status)) {  // NOLINT
    assert(!std::get<1>(data_).ok() && "Result constructed from an OK Status");
    if (std::get<1>(data_).ok()) {
      std::get<1>(data_) = InternalError("Result constructed from an OK Status");
    }
  }

  // A Result of a type T can be made from (a unique_ptr<Derived> for a unique_ptr<Base>, say).
  template <typename U>
  requires(!std::is_same_v<U, T> && std::is_convertible_v<U&&, T>)
      Result(Result<U>&& other)  // NOLINT: implicit, like the value it holds
      : data_(other.ok() ? std::variant<T, Status>(std::in_place_index<0>, std::move(*other))
                         : std::variant<T, Status>(std::in_place_index<1>, other.status())) {}

  bool ok() const { return data_.index() == 0; }
  Status status() const { return ok() ? Status::OK() : std::get<1>(data_); }

  T& value() & { return std::get<0>(data_); }
  const T& value() const& { return std::get<0>(data_); }
  T&& value() && { return std::get<0>(std::move(data_)); }

  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  T value_or(T fallback) const& { return ok() ? value() : std::move(fallback); }

 private:
  std::variant<T, Status> data_;
};

}  // namespace troupe

// Evaluates `expr` (a Result<T>); on error returns its Status, else moves the value into `lhs`.
#define TROUPE_ASSIGN_OR_RETURN(lhs, expr) \
  TROUPE_ASSIGN_OR_RETURN_IMPL(TROUPE_STATUS_CONCAT(_troupe_result_, __LINE__), lhs, expr)
#define TROUPE_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                 \
  if (!tmp.ok()) return tmp.status();                \
  lhs = std::move(tmp).value()
