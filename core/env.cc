#include "core/env.h"

#include <dirent.h>
#include <fcntl.h>
#include <glob.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>

#include "core/internal/posix_files.h"

namespace troupe {

Status IoError(std::string_view what, const std::string& path, int err) {
  std::string msg = std::string(what) + " " + path + ": " + std::strerror(err);
  switch (err) {
    case ENOENT:
      return NotFoundError(msg);
    case EACCES:
    case EPERM:
      return PermissionDeniedError(msg);
    case ENOSPC:
    case EDQUOT:
      return ResourceExhaustedError(msg);
    case EEXIST:
      return AlreadyExistsError(msg);
    default:
      return UnknownError(msg);
  }
}

namespace {

// ---- the POSIX Env ------------------------------------------------------------------------

class PosixEnv final : public Env {
 public:
  Result<std::unique_ptr<SequentialFile>> NewSequentialFile(const std::string& path,
                                                            size_t buffer_bytes) override {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return IoError("cannot open", path, errno);
    struct stat st;
    if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
      ::close(fd);
      return InvalidArgumentError(path + " is a directory, not a file");
    }
    (void)::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    return internal::NewPosixSequentialFile(fd, path, buffer_bytes);
  }

  Result<std::unique_ptr<RandomAccessFile>> NewRandomAccessFile(const std::string& path) override {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return IoError("cannot open", path, errno);
    struct stat st;
    if (::fstat(fd, &st) != 0) {
      int err = errno;
      ::close(fd);
      return IoError("cannot stat", path, err);
    }
    if (S_ISDIR(st.st_mode)) {
      ::close(fd);
      return FailedPreconditionError(path + " is a directory, expected a file");
    }
    return internal::NewPosixRandomAccessFile(path, fd, static_cast<uint64_t>(st.st_size));
  }

  Result<std::unique_ptr<WritableFile>> NewWritableFile(
      const std::string& path, const WritableFileOptions& options) override {
    const int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (options.append ? O_APPEND : O_TRUNC);
    int fd = -1;
    bool direct = false;
    if (options.direct_io && !options.append) {
      fd = ::open(path.c_str(), flags | O_DIRECT, 0644);
      direct = fd >= 0;
      if (fd < 0 && errno != EINVAL) return IoError("cannot create", path, errno);
    }
    if (fd < 0) fd = ::open(path.c_str(), flags, 0644);
    if (fd < 0) return IoError(options.append ? "cannot open" : "cannot create", path, errno);
    return internal::NewPosixWritableFile(path, fd, options, direct);
  }

  bool FileExists(const std::string& path) override {
    struct stat st;
    return ::stat(path.c_str(), &st) == 0;
  }

  bool IsDirectory(const std::string& path) override {
    struct stat st;
    return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
  }

  Result<uint64_t> GetFileSize(const std::string& path) override {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) return IoError("cannot stat", path, errno);
    return static_cast<uint64_t>(st.st_size);
  }

  Status DeleteFile(const std::string& path) override {
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
      return IoError("cannot delete", path, errno);
    }
    return Status::OK();
  }

  Status DeleteRecursively(const std::string& dir) override {
    struct stat st;
    if (::lstat(dir.c_str(), &st) != 0) {
      if (errno == ENOENT) return Status::OK();
      return IoError("cannot stat", dir, errno);
    }
    if (S_ISDIR(st.st_mode)) {
      TROUPE_ASSIGN_OR_RETURN(auto names, GetChildren(dir));
      for (const std::string& name : names) {
        TROUPE_RETURN_IF_ERROR(DeleteRecursively(JoinPath(dir, name)));
      }
      if (::rmdir(dir.c_str()) != 0 && errno != ENOENT) {
        return IoError("cannot delete directory", dir, errno);
      }
      return Status::OK();
    }
    return DeleteFile(dir);
  }

  Status RenameFile(const std::string& from, const std::string& to) override {
    if (::rename(from.c_str(), to.c_str()) != 0) {
      return IoError("cannot rename " + from + " to", to, errno);
    }
    return Status::OK();
  }

  Status SyncDirectory(const std::string& dir) override {
    int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return IoError("cannot open directory", dir, errno);
    int rc = ::fsync(fd);
    int err = errno;
    ::close(fd);
    if (rc != 0) return IoError("cannot sync directory", dir, err);
    return Status::OK();
  }

  Status CreateDirectories(const std::string& dir) override {
    if (dir.empty() || IsDirectory(dir)) return Status::OK();
    std::string parent = DirName(dir);
    if (parent != dir && parent != "." && parent != "/") {
      TROUPE_RETURN_IF_ERROR(CreateDirectories(parent));
    }
    if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
      return IoError("cannot create directory", dir, errno);
    }
    if (!IsDirectory(dir)) {
      return FailedPreconditionError("cannot create directory " + dir +
                                     ": a file of that name is in the way");
    }
    return Status::OK();
  }

  Result<std::vector<std::string>> GetChildren(const std::string& dir) override {
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr) return IoError("cannot list directory", dir, errno);
    std::vector<std::string> names;
    while (struct dirent* e = ::readdir(d)) {
      std::string name = e->d_name;
      if (name != "." && name != "..") names.push_back(std::move(name));
    }
    ::closedir(d);
    std::sort(names.begin(), names.end());
    return names;
  }

  Result<std::vector<std::string>> Glob(const std::string& pattern) override {
    glob_t g{};
    const int rc = ::glob(pattern.c_str(), 0, nullptr, &g);
    std::vector<std::string> paths;
    if (rc == 0) {
      for (size_t i = 0; i < g.gl_pathc; ++i) paths.emplace_back(g.gl_pathv[i]);
    }
    globfree(&g);
    if (rc == GLOB_NOSPACE) return ResourceExhaustedError("out of memory matching " + pattern);
    if (rc == GLOB_ABORTED) {
      return UnknownError("cannot read a directory while matching " + pattern);
    }
    std::sort(paths.begin(), paths.end());
    return paths;
  }
};

}  // namespace

Env* Env::Default() {
  static Env* const env = new PosixEnv;  // never destroyed: usable from static destructors
  return env;
}

Result<std::string> Env::ReadFileToString(const std::string& path) {
  // Read to the end rather than to the size stat reports: kernel files (/proc, /sys) say 0.
  TROUPE_ASSIGN_OR_RETURN(auto file, NewSequentialFile(path, 64 << 10));
  const uint64_t expected = GetFileSize(path).value_or(0);
  std::string contents;
  size_t have = 0;
  for (size_t want = static_cast<size_t>(expected) + 1;; want = std::max<size_t>(have, 1 << 20)) {
    contents.resize(have + want);
    TROUPE_ASSIGN_OR_RETURN(size_t got, file->Read(contents.data() + have, want));
    have += got;
    if (got < want) break;  // the end of the file
  }
  contents.resize(have);
  return contents;
}

Status Env::WriteStringToFile(const std::string& path, std::string_view data) {
  TROUPE_ASSIGN_OR_RETURN(auto file, NewWritableFile(path));
  Status s = file->Append(data);
  Status c = file->Close();
  return s.ok() ? c : s;
}

Status Env::WriteFileAtomically(const std::string& path, std::string_view contents) {
  const std::string temp = path + TempSuffix();
  Status s;
  {
    auto file = NewWritableFile(temp);
    if (!file.ok()) return file.status();
    s = (*file)->Append(contents);
    if (s.ok()) s = (*file)->Sync();
    if (s.ok()) s = (*file)->Close();
  }
  if (s.ok()) s = RenameFile(temp, path);
  if (!s.ok()) {
    (void)DeleteFile(temp);
    return s;
  }
  return SyncDirectory(DirName(path));
}

std::string JoinPath(std::string_view dir, std::string_view name) {
  if (dir.empty() || (!name.empty() && name.front() == '/')) return std::string(name);
  std::string out(dir);
  if (out.back() != '/') out += '/';
  out += name;
  return out;
}

std::string DirName(std::string_view path) {
  while (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
  size_t slash = path.rfind('/');
  if (slash == std::string_view::npos) return ".";
  if (slash == 0) return "/";
  return std::string(path.substr(0, slash));
}

std::string BaseName(std::string_view path) {
  while (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
  size_t slash = path.rfind('/');
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

std::string TempSuffix() {
  static std::atomic<uint64_t> counter{0};
  thread_local std::mt19937_64 rng(
      std::random_device{}() ^ static_cast<uint64_t>(::getpid()) << 32 ^
      static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()));
  uint64_t value = rng() ^ counter.fetch_add(1);
  return std::string(kTempMarker) + std::to_string(value);
}

}  // namespace troupe
