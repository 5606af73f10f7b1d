// The coordinator's straggler watch. In synchronous data-parallel training every host waits in
// allreduce for the slowest one (slow compute, or a slow link: its pieces arrive last
// everywhere), while the slowest host itself, whose peers' pieces are already there when it
// gets to them, waits the least. So the host whose allreduce wait stays far below the others'
// is the one they wait for.
#include <algorithm>
#include <cstdio>
#include <vector>

#include "actors/actors_internal.h"
#include "core/logging.h"

namespace troupe::actors {
namespace {

constexpr double kRatio = 1.5;   // the others wait at least this many times as long
constexpr double kMinGapMs = 2;  // and at least this much longer per step
constexpr int kReportTicks = 6;  // ticks in a row (3 s at the default heartbeat) to report

struct HostWait {
  std::string host;
  double ms = 0;
};

// Each training host's mean recent allreduce wait (hosts with a worker done are left out).
std::vector<HostWait> HostWaits(const CoordinatorState& st) {
  std::map<std::string, std::pair<double, int>> sums;
  for (const auto& [rank, w] : st.workers) {
    if (w.done || w.last_step <= 0) continue;
    auto& s = sums[w.info.host];
    s.first += w.wait_ms;
    ++s.second;
  }
  std::vector<HostWait> out;
  for (const auto& [host, s] : sums) out.push_back({host, s.first / s.second});
  return out;
}

// The host the others wait for, with its wait and the others' median; empty when none.
std::string Behind(std::vector<HostWait> hosts, double* own_ms, double* others_ms) {
  if (hosts.size() < 2) return "";
  std::sort(hosts.begin(), hosts.end(),
            [](const HostWait& a, const HostWait& b) { return a.ms < b.ms; });
  const size_t n = hosts.size() - 1;  // the others: hosts[1..]
  const double median = (hosts[1 + (n - 1) / 2].ms + hosts[1 + n / 2].ms) / 2;
  if (median < kRatio * hosts[0].ms || median - hosts[0].ms < kMinGapMs) return "";
  *own_ms = hosts[0].ms;
  *others_ms = median;
  return hosts[0].host;
}

void SetNote(CoordinatorShared& shared, std::string note) {
  std::lock_guard<std::mutex> lock(shared.mu);
  shared.straggler = std::move(note);
}

}  // namespace

void WatchStragglers(CoordinatorState& st, CoordinatorShared& shared) {
  double own = 0, others = 0;
  const std::string host = Behind(HostWaits(st), &own, &others);
  if (!host.empty() && host == st.slow_host) {
    ++st.slow_ticks;
  } else if (!host.empty()) {
    if (st.slow_reported) SetNote(shared, "");
    st.slow_host = host;
    st.slow_ticks = 1;
    st.slow_reported = false;
  } else if (st.slow_ticks > 0 && --st.slow_ticks == 0 && st.slow_reported) {
    TROUPE_LOG(INFO) << "straggler: host " << st.slow_host << " caught up";
    SetNote(shared, "");
    st.slow_reported = false;
  }
  if (!host.empty() && st.slow_ticks >= kReportTicks) {
    char note[160];
    std::snprintf(note, sizeof(note), "slowest host %s (others wait %.1f ms/step for it)",
                  host.c_str(), others - own);
    if (!st.slow_reported) {
      TROUPE_LOG(WARNING) << "straggler: host " << host << " is behind: the other hosts wait "
                          << others << " ms per step in allreduce, it waits " << own << " ms";
    }
    st.slow_reported = true;
    SetNote(shared, note);
  }
}

}  // namespace troupe::actors
