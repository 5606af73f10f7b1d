#include "launch/supervisor.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "actors/control_plane.h"
#include "core/env.h"
#include "core/logging.h"
#include "launch/command.h"
#include "launch/rank_report.h"

namespace troupe::launch {
namespace {

std::atomic<pid_t> g_child{0};
std::atomic<int> g_stop_signal{0};
std::atomic<int> g_forward_first_as{0};  // SupervisorOptions::stop_signal

void ForwardSignal(int sig) {
  const bool first = g_stop_signal.exchange(sig) == 0;
  const int as = first && g_forward_first_as.load() != 0 ? g_forward_first_as.load() : sig;
  pid_t child = g_child.load();
  // The child's process group: mpirun (whose ranks Open MPI puts in groups of their own) or
  // the command's processes.
  if (child > 0) ::kill(-child, as);
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

// The files an attempt's processes report their start and their job's stop in.
struct AttemptFiles {
  std::string start, end, stop;  // all empty: not watched
};

// The first line of `path` (empty while nothing was written).
std::string FirstLine(const std::string& path) {
  Result<std::string> text = Env::Default()->ReadFileToString(path);
  return text.ok() ? text->substr(0, text->find('\n')) : "";
}

// Ends `pid`'s process group (SIGTERM, then SIGKILL) when the launcher is stuck: the job it
// runs reported its stop (a line in the end file) and the launcher outlived the grace, or no
// process joined (the start file stays empty) within the start timeout.
class StuckLauncherWatch {
 public:
  StuckLauncherWatch(pid_t pid, AttemptFiles files, const SupervisorOptions& options)
      : pid_(pid), files_(std::move(files)), options_(options) {}

  void Poll() {
    if (files_.end.empty() || killed_) return;
    auto now = std::chrono::steady_clock::now();
    if (!stuck_) Check(now);
    if (!stuck_) return;
    std::chrono::duration<double> since = now - stuck_at_;
    if (!termed_) {
      TROUPE_LOG(WARNING) << "supervisor: " << why_ << "; ending the launcher";
      ::kill(-pid_, SIGTERM);
      termed_ = true;
    } else if (since.count() >= options_.kill_after_s) {
      ::kill(-pid_, SIGKILL);
      killed_ = true;
    }
  }

 private:
  using TimePoint = std::chrono::steady_clock::time_point;

  void Check(TimePoint now) {
    if (!ended_) {
      reason_ = FirstLine(files_.end);
      if (!reason_.empty()) {
        ended_ = true;
        ended_at_ = now;
      }
    }
    if (ended_ && Seconds(now - ended_at_) >= options_.launcher_grace_s) {
      Stuck(now, "the job stopped (" + reason_ + ") but its launcher still runs " +
                     Format(options_.launcher_grace_s) +
                     " s later (waiting for a host it cannot reach?)");
    } else if (!ended_ && options_.start_timeout_s > 0 && !started_) {
      started_ = !FirstLine(files_.start).empty();
      if (!started_ && Seconds(now - launched_) >= options_.start_timeout_s) {
        Stuck(now, "no process of the job joined within " + Format(options_.start_timeout_s) +
                       " s of the launch (a host the launcher cannot reach?)");
      }
    }
  }
  void Stuck(TimePoint now, std::string why) {
    stuck_ = true;
    stuck_at_ = now;
    why_ = std::move(why);
  }
  static double Seconds(std::chrono::steady_clock::duration d) {
    return std::chrono::duration<double>(d).count();
  }
  static std::string Format(double s) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%g", s);
    return buf;
  }

  pid_t pid_;
  AttemptFiles files_;
  const SupervisorOptions& options_;
  TimePoint launched_ = std::chrono::steady_clock::now();
  bool ended_ = false, started_ = false, stuck_ = false, termed_ = false, killed_ = false;
  std::string reason_, why_;
  TimePoint ended_at_, stuck_at_;
};

// Runs one attempt, naming `files` in its environment when given; returns the wait status.
Result<int> RunOnce(const std::vector<std::string>& argv, const AttemptFiles& files,
                    const SupervisorOptions& options) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = ::fork();
  if (pid < 0) return InternalError(std::string("fork failed: ") + std::strerror(errno));
  if (pid == 0) {
    ::setpgid(0, 0);  // own group, so a forwarded signal reaches every descendant
    if (!files.end.empty()) {
      ::setenv(actors::kJobStartFileEnv, files.start.c_str(), 1);
      ::setenv(actors::kJobEndFileEnv, files.end.c_str(), 1);
      ::setenv(kJobStopFileEnv, files.stop.c_str(), 1);
    }
    ::execvp(args[0], args.data());
    std::fprintf(stderr, "troupe supervise: cannot run '%s': %s\n", args[0], std::strerror(errno));
    ::_exit(127);
  }
  ::setpgid(pid, pid);
  g_child.store(pid);
  StuckLauncherWatch watch(pid, files, options);
  int status = 0;
  for (;;) {
    pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) break;
    if (r < 0 && errno != EINTR) {
      return InternalError(std::string("waitpid: ") + std::strerror(errno));
    }
    watch.Poll();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  g_child.store(0);
  return status;
}

// A private directory for the attempts' job-end files; removed when supervision ends.
class NoticeDir {
 public:
  NoticeDir() {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/troupe-supervise.XXXXXX";
    std::vector<char> buf(pattern.begin(), pattern.end());
    buf.push_back('\0');
    if (::mkdtemp(buf.data()) != nullptr) dir_ = buf.data();
  }
  ~NoticeDir() {
    for (const auto& f : files_) ::unlink(f.c_str());
    if (!dir_.empty()) ::rmdir(dir_.c_str());
  }
  // Fresh file paths for attempt `n` (empty when no directory could be made).
  AttemptFiles Next(int n) {
    if (dir_.empty()) return {};
    std::string base = dir_ + "/attempt-" + std::to_string(n);
    AttemptFiles f{base + ".start", base + ".end", base + ".stop"};
    for (const std::string& path : {f.start, f.end, f.stop}) {
      ::unlink(path.c_str());
      files_.push_back(path);
    }
    return f;
  }

 private:
  std::string dir_;
  std::vector<std::string> files_;
};

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
  g_forward_first_as.store(options.stop_signal);
  SupervisorResult result;
  double backoff = options.initial_backoff_s;
  NoticeDir notices;
  for (;;) {
    auto started = std::chrono::steady_clock::now();
    const AttemptFiles files = notices.Next(result.restarts);
    TROUPE_ASSIGN_OR_RETURN(int status, RunOnce(argv, files, options));
    if (int sig = g_stop_signal.load()) {
      const std::string stopped = files.stop.empty() ? "" : FirstLine(files.stop);
      const bool exited_75 = WIFEXITED(status) && WEXITSTATUS(status) == kExitStopped;
      if (!stopped.empty() || exited_75) {
        result.exit_code = kExitStopped;
        result.summary = std::string("stopped by ") + strsignal(sig) + " (child ended with " +
                         Describe(status) +
                         "): " + (stopped.empty() ? "the job wrote its checkpoint" : stopped) +
                         "; not restarting (exit code " + std::to_string(kExitStopped) + ")";
        return result;
      }
      result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + sig;
      result.summary = std::string("stopped by ") + strsignal(sig) + "; child ended with " +
                       Describe(status) + " before its job reported a checkpoint; not restarting";
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
