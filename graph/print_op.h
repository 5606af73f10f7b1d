// Print: tf.print's counterpart. Prints its items (text as-is, tensors formatted as tf.print
// formats them: "[1 2 3]", nested brackets, at most 3 leading and trailing elements per
// dimension) separated by spaces, each time it runs: at once in eager mode, on every call of a
// traced function (unlike host-side logging in the callable, which runs only while tracing).
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"
#include "graph/value.h"

namespace troupe {

class Arg;

class PrintItem {
 public:
  PrintItem(const Arg& arg);                                      // NOLINT(runtime/explicit)
  PrintItem(const char* text) : text_(text) {}                    // NOLINT(runtime/explicit)
  PrintItem(std::string text) : text_(std::move(text)) {}         // NOLINT(runtime/explicit)
  PrintItem(Value v) : value_(std::move(v)), is_value_(true) {}   // NOLINT(runtime/explicit)
  PrintItem(Tensor t) : value_(std::move(t)), is_value_(true) {}  // NOLINT(runtime/explicit)
  bool is_value() const { return is_value_; }
  const std::string& text() const { return text_; }
  const Value& value() const { return value_; }

 private:
  std::string text_;
  Value value_;
  bool is_value_ = false;
};

// Prints now (eager) or adds a Print node (tracing). Returns the build or run error, if any.
Status Print(const std::vector<PrintItem>& items);

// Where Print writes each line (without the newline); nullptr restores stdout. Returns the
// previous sink.
using PrintSink = std::function<void(std::string_view line)>;
PrintSink SetPrintSink(PrintSink sink);

// tf.print's formatting of one tensor.
std::string FormatTensorForPrint(const Tensor& t, int summarize = 3);

}  // namespace troupe
