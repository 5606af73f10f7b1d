#include "launch/supervisor.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "core/logging.h"

namespace troupe::launch {
namespace {

std::atomic<pid_t> g_child{0};
std::atomic<int> g_stop_signal{0};

void ForwardSignal(int sig) {
  g_stop_signal.store(sig);
  pid_t child = g_child.load();
  if (child > 0) ::kill(-child, sig);  // the whole process group (mpirun and its ranks)
}

// Restores the previous handlers when supervision ends.
class SignalForwarding {
 public:
  SignalForwarding() {
    struct sigaction sa = {};
    sa.sa_handler = ForwardSignal;
    sigemptyset(&sa.sa_mask);
    ::sigaction(SIGTERM, &sa, &old_term_);
    ::sigaction(SIGINT, &sa, &old_int_);
  }
  ~SignalForwarding() {
    ::sigaction(SIGTERM, &old_term_, nullptr);
    ::sigaction(SIGINT, &old_int_, nullptr);
  }

 private:
  struct sigaction old_term_ = {};
  struct sigaction old_int_ = {};
};

// Runs one attempt; returns the wait status.
Result<int> RunOnce(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = ::fork();
  if (pid < 0) return InternalError(std::string("fork failed: ") + std::strerror(errno));
  if (pid == 0) {
    ::setpgid(0, 0);  // own group, so a forwarded signal reaches every descendant
    ::execvp(args[0], args.data());
    std::fprintf(stderr, "troupe supervise: cannot run '%s': %s\n", args[0], std::strerror(errno));
    ::_exit(127);
  }
  ::setpgid(pid, pid);
  g_child.store(pid);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return InternalError(std::string("waitpid: ") + std::strerror(errno));
  }
  g_child.store(0);
  return status;
}

std::string Describe(int status) {
  if (WIFEXITED(status)) return "exit code " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return std::string("signal ") + strsignal(WTERMSIG(status));
  return "unknown status";
}

}  // namespace

Result<SupervisorResult> Supervise(const std::vector<std::string>& argv,
                                   const SupervisorOptions& options) {
  if (argv.empty()) return InvalidArgumentError("troupe supervise: no command given after --");
  if (options.max_restarts < 0) {
    return InvalidArgumentError("--max-restarts must be >= 0, got " +
                                std::to_string(options.max_restarts));
  }
  SignalForwarding forwarding;
  g_stop_signal.store(0);
  SupervisorResult result;
  double backoff = options.initial_backoff_s;
  for (;;) {
    auto started = std::chrono::steady_clock::now();
    TROUPE_ASSIGN_OR_RETURN(int status, RunOnce(argv));
    if (int sig = g_stop_signal.load()) {
      result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + sig;
      result.summary = std::string("stopped by ") + strsignal(sig) + "; child ended with " +
                       Describe(status) + "; not restarting";
      return result;
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
      result.exit_code = 0;
      result.summary =
          "command ended cleanly after " + std::to_string(result.restarts) + " restart(s)";
      return result;
    }
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    if (std::find(options.fatal_exit_codes.begin(), options.fatal_exit_codes.end(), code) !=
        options.fatal_exit_codes.end()) {
      result.exit_code = code;
      result.summary =
          "command reported a configuration error (" + Describe(status) + "); not restarting";
      return result;
    }
    if (result.restarts >= options.max_restarts) {
      result.exit_code = kExitGaveUp;
      result.summary = "command failed (" + Describe(status) + ") after " +
                       std::to_string(result.restarts) + " restart(s); giving up";
      return result;
    }
    // A run that lasted a while earned a fresh backoff.
    std::chrono::duration<double> ran = std::chrono::steady_clock::now() - started;
    if (ran.count() > 10 * options.max_backoff_s) backoff = options.initial_backoff_s;
    ++result.restarts;
    TROUPE_LOG(WARNING) << "supervisor: command failed (" << Describe(status) << "); restart "
                        << result.restarts << " of " << options.max_restarts << " in " << backoff
                        << " s";
    auto until = std::chrono::steady_clock::now() +
                 std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                     std::chrono::duration<double>(backoff));
    while (std::chrono::steady_clock::now() < until && g_stop_signal.load() == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (int sig = g_stop_signal.load()) {
      result.exit_code = 128 + sig;
      result.summary = std::string("stopped by ") + strsignal(sig) + " during backoff";
      return result;
    }
    backoff = std::min(backoff * 2, options.max_backoff_s);
  }
}

}  // namespace troupe::launch
