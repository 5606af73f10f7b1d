#include "graph/gradients.h"

#include <map>
#include <mutex>

namespace troupe {
namespace {

struct Registry {
  std::mutex mu;
  std::map<std::string, GradFn, std::less<>> fns;  // node-based: pointers stay valid
};

Registry& Storage() {
  static Registry* r = new Registry();
  return *r;
}

void EnsureBuiltins() {
  static std::once_flag once;
  std::call_once(once, [] {
    internal::RegisterMathGradients();
    internal::RegisterArrayGradients();
    internal::RegisterNnGradients();
  });
}

}  // namespace

void RegisterGradient(const std::string& op, GradFn fn) {
  Registry& r = Storage();
  std::lock_guard<std::mutex> lock(r.mu);
  r.fns[op] = std::move(fn);
}

const GradFn* LookupGradient(std::string_view op) {
  EnsureBuiltins();
  Registry& r = Storage();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.fns.find(op);
  return it == r.fns.end() ? nullptr : &it->second;
}

}  // namespace troupe
