#include "graph/op_profile.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace troupe::internal {
namespace {

struct Entry {
  int64_t calls = 0;
  double seconds = 0;
};

class Profile {
 public:
  void Record(Device device, std::string_view op, double seconds) {
    std::lock_guard<std::mutex> lock(mu_);
    Entry& e = entries_[device.ToString() + " " + std::string(op)];
    ++e.calls;
    e.seconds += seconds;
  }
  ~Profile() {
    std::vector<std::pair<std::string, Entry>> rows(entries_.begin(), entries_.end());
    std::sort(rows.begin(), rows.end(),
              [](const auto& a, const auto& b) { return a.second.seconds > b.second.seconds; });
    double total = 0;
    for (const auto& [name, e] : rows) total += e.seconds;
    std::fprintf(stderr, "op profile (TROUPE_PROFILE_OPS): %.3f s in kernels\n", total);
    std::fprintf(stderr, "%-60s %10s %12s %10s %7s\n", "device op", "calls", "total ms", "mean us",
                 "share");
    for (const auto& [name, e] : rows) {
      std::fprintf(stderr, "%-60s %10lld %12.3f %10.2f %6.1f%%\n", name.c_str(),
                   static_cast<long long>(e.calls), e.seconds * 1e3, e.seconds / e.calls * 1e6,
                   total > 0 ? 100 * e.seconds / total : 0.0);
    }
  }

 private:
  std::mutex mu_;
  std::map<std::string, Entry> entries_;
};

Profile& Global() {
  static Profile profile;  // destroyed (and printed) at exit
  return profile;
}

}  // namespace

namespace {
// TROUPE_PROFILE_OPS, and a warning (once) for a value that turns nothing on.
std::string_view ProfileSetting() {
  static const std::string_view setting = [] {
    const char* v = std::getenv("TROUPE_PROFILE_OPS");
    const std::string_view s = v == nullptr ? std::string_view() : std::string_view(v);
    if (!s.empty() && s != "0" && s != "1" && s != "shapes") {
      std::fprintf(stderr,
                   "warning: TROUPE_PROFILE_OPS=%s is not 1 (per op) or shapes (per op and input "
                   "shapes); ops are not profiled\n",
                   v);
    }
    return s;
  }();
  return setting;
}
}  // namespace

bool OpProfileEnabled() {
  static const bool enabled = ProfileSetting() == "1" || OpProfileByShape();
  return enabled;
}

bool OpProfileByShape() {
  static const bool by_shape = ProfileSetting() == "shapes";
  return by_shape;
}

std::string OpProfileKey(std::string_view op, std::span<const Tensor> inputs) {
  std::string key(op);
  if (!OpProfileByShape()) return key;
  for (const Tensor& t : inputs) key += " " + (t.initialized() ? t.shape().ToString() : "-");
  return key;
}

void RecordOpTime(Device device, std::string_view op, double seconds) {
  Global().Record(device, op, seconds);
}

}  // namespace troupe::internal
