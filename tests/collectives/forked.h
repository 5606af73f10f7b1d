// RunForked: runs a function in N forked child processes (the "ranks" of a one-host job) and
// collects what each reports, so shared-memory backends can be tested without mpirun. A child
// that does not finish in time is killed, so a hang fails the test instead of stalling it.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace troupe::testing {

struct ChildResult {
  std::string report;   // what fn returned ("" = success)
  int exit_status = 0;  // raw waitpid status
  bool timed_out = false;
};

// Forks `n` children running fn(rank); fn's return value travels back through a pipe. Call
// it before anything in the parent starts threads that children would need.
std::vector<ChildResult> RunForked(int n, const std::function<std::string(int rank)>& fn,
                                   int timeout_seconds = 60);

// A segment name no other test run uses.
std::string UniqueShmName(const std::string& tag);

}  // namespace troupe::testing
