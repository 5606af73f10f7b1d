// Which ops' CPU kernels may write their output over an input's buffer (TF's
// forward_input_or_allocate_output): the elementwise families of elementwise_impl.h, whose
// output element i depends only on input element i of a same-shaped operand. The executor
// asks at plan time and, when it moved in an input's last reference, hands that input's buffer
// out as the output (fewer buffers alive, no allocation or pool traffic per step).
//
// Contract: an op is marked only while the registry registers it (OpRegistry::Global's first
// call), before any executor asks; marking is idempotent. Header-only so that only the
// executor and the elementwise kernels include it.
#pragma once

#include <mutex>
#include <set>
#include <string>
#include <string_view>

namespace troupe::kernels {

namespace internal {
struct ForwardableOps {
  std::mutex mu;
  std::set<std::string, std::less<>> names;
};
inline ForwardableOps& Forwardable() {
  static ForwardableOps* ops = new ForwardableOps();  // never destroyed: read at exit too
  return *ops;
}
}  // namespace internal

// Marks `op`'s CPU kernel as one that may compute over an input in place.
inline void MarkOutputMayAliasInput(std::string_view op) {
  auto& f = internal::Forwardable();
  std::lock_guard<std::mutex> lock(f.mu);
  f.names.emplace(op);
}

inline bool OutputMayAliasInput(std::string_view op) {
  auto& f = internal::Forwardable();
  std::lock_guard<std::mutex> lock(f.mu);
  return f.names.find(op) != f.names.end();
}

}  // namespace troupe::kernels
