#include "tests/collectives/forked.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace troupe::testing {

std::vector<ChildResult> RunForked(int n, const std::function<std::string(int rank)>& fn,
                                   int timeout_seconds) {
  std::vector<pid_t> pids(n);
  std::vector<int> fds(n);
  for (int r = 0; r < n; ++r) {
    int p[2];
    if (pipe(p) != 0) return {};
    pid_t pid = fork();
    if (pid == 0) {
      close(p[0]);
      std::string out = fn(r);
      size_t off = 0;
      while (off < out.size()) {
        ssize_t w = write(p[1], out.data() + off, out.size() - off);
        if (w <= 0) break;
        off += static_cast<size_t>(w);
      }
      close(p[1]);
      _exit(0);
    }
    close(p[1]);
    pids[r] = pid;
    fds[r] = p[0];
  }
  std::vector<ChildResult> results(n);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_seconds);
  for (int r = 0; r < n; ++r) {
    // Read until EOF (the child exits or dies), killing it at the deadline.
    char buf[4096];
    for (;;) {
      pollfd pfd{fds[r], POLLIN, 0};
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                            deadline - std::chrono::steady_clock::now())
                            .count();
      if (left <= 0) {
        results[r].timed_out = true;
        break;
      }
      if (poll(&pfd, 1, static_cast<int>(std::min<long long>(left, 100))) <= 0) continue;
      ssize_t got = read(fds[r], buf, sizeof(buf));
      if (got <= 0) break;
      results[r].report.append(buf, static_cast<size_t>(got));
    }
    close(fds[r]);
  }
  for (int r = 0; r < n; ++r) {
    if (results[r].timed_out) kill(pids[r], SIGKILL);
    waitpid(pids[r], &results[r].exit_status, 0);
  }
  return results;
}

std::string UniqueShmName(const std::string& tag) {
  static std::atomic<int> counter{0};
  return "/troupe-test-" + tag + "-" + std::to_string(getpid()) + "-" +
         std::to_string(counter.fetch_add(1));
}

}  // namespace troupe::testing
