#include "checkpoint/file_util.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <random>
#include <thread>

namespace troupe::ckpt {
namespace {

constexpr size_t kBufferSize = 1 << 20;
// Large writes and reads go through the kernel in pieces of this size, so a slow device or a
// signal never leaves a huge single syscall half done without progress.
constexpr size_t kMaxIo = 64 << 20;

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
      return InternalError(msg);
  }
}

}  // namespace

// O_DIRECT staging: buffers and offsets aligned to the largest common logical block size.
constexpr size_t kDirectAlign = 4096;
constexpr size_t kDirectBuffer = 8 << 20;

struct WritableFile::Direct {
  struct Free {
    void operator()(char* p) const { std::free(p); }
  };
  std::unique_ptr<char, Free> buffers[2];
  int current = 0;
  size_t fill = 0;       // bytes in buffers[current]
  uint64_t offset = 0;   // file offset of buffers[current]
  std::thread inflight;  // writes the other buffer
  Status inflight_status;
  bool finished = false;  // tail written; the file is complete

  Status Wait() {
    if (inflight.joinable()) inflight.join();
    return inflight_status;
  }
};

WritableFile::WritableFile(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}

WritableFile::~WritableFile() {
  if (direct_) (void)direct_->Wait();
  if (fd_ >= 0) ::close(fd_);
}

Result<std::unique_ptr<WritableFile>> WritableFile::Create(const std::string& path,
                                                           bool direct_io) {
  const int flags = O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC;
  int fd = -1;
  bool direct = false;
  if (direct_io) {
    fd = ::open(path.c_str(), flags | O_DIRECT, 0644);
    direct = fd >= 0;
    if (fd < 0 && errno != EINVAL) return IoError("cannot create", path, errno);
  }
  if (fd < 0) fd = ::open(path.c_str(), flags, 0644);
  if (fd < 0) return IoError("cannot create", path, errno);
  std::unique_ptr<WritableFile> f(new WritableFile(path, fd));
  if (direct) {
    f->direct_ = std::make_unique<Direct>();
    for (auto& b : f->direct_->buffers) {
      b.reset(static_cast<char*>(std::aligned_alloc(kDirectAlign, kDirectBuffer)));
      if (!b) return ResourceExhaustedError("no memory for direct-I/O buffers of " + path);
    }
  }
  return f;
}

// Hands the current staging buffer (len bytes, a multiple of kDirectAlign) to a helper thread.
Status WritableFile::SubmitDirect(size_t len) {
  Direct& d = *direct_;
  TROUPE_RETURN_IF_ERROR(d.Wait());
  char* buf = d.buffers[d.current].get();
  const uint64_t offset = d.offset;
  d.inflight = std::thread([this, buf, len, offset] {
    size_t done = 0;
    while (done < len) {
      ssize_t w = ::pwrite(fd_, buf + done, len - done, static_cast<off_t>(offset + done));
      if (w < 0) {
        if (errno == EINTR) continue;
        direct_->inflight_status = IoError("cannot write", path_, errno);
        return;
      }
      done += static_cast<size_t>(w);
    }
  });
  d.offset += len;
  d.current ^= 1;
  d.fill = 0;
  return Status::OK();
}

Status WritableFile::AppendDirect(const char* p, size_t n) {
  Direct& d = *direct_;
  if (d.finished) return FailedPreconditionError("append to synced direct-I/O file " + path_);
  while (n > 0) {
    size_t take = std::min(n, kDirectBuffer - d.fill);
    std::memcpy(d.buffers[d.current].get() + d.fill, p, take);
    d.fill += take;
    p += take;
    n -= take;
    if (d.fill == kDirectBuffer) TROUPE_RETURN_IF_ERROR(SubmitDirect(kDirectBuffer));
  }
  return Status::OK();
}

Status WritableFile::FinishDirect() {
  Direct& d = *direct_;
  if (d.finished) return Status::OK();
  d.finished = true;
  if (d.fill > 0) {
    // The tail goes out padded to a whole block; the file is trimmed back to its size.
    size_t padded = (d.fill + kDirectAlign - 1) / kDirectAlign * kDirectAlign;
    std::memset(d.buffers[d.current].get() + d.fill, 0, padded - d.fill);
    TROUPE_RETURN_IF_ERROR(SubmitDirect(padded));
  }
  TROUPE_RETURN_IF_ERROR(d.Wait());
  if (::ftruncate(fd_, static_cast<off_t>(size_)) != 0) {
    return IoError("cannot set the size of", path_, errno);
  }
  return Status::OK();
}

Status WritableFile::WriteRaw(const char* p, size_t n) {
  while (n > 0) {
    ssize_t w = ::write(fd_, p, std::min(n, kMaxIo));
    if (w < 0) {
      if (errno == EINTR) continue;
      return IoError("cannot write", path_, errno);
    }
    p += w;
    n -= static_cast<size_t>(w);
    written_ += static_cast<uint64_t>(w);
  }
  if (writeback_every_ > 0 && written_ - writeback_started_ >= writeback_every_) {
    // Best effort: a failure here only means the final fdatasync does all the work.
    (void)::sync_file_range(fd_, static_cast<off_t>(writeback_started_),
                            static_cast<off_t>(written_ - writeback_started_),
                            SYNC_FILE_RANGE_WRITE);
    writeback_started_ = written_;
  }
  return Status::OK();
}

Status WritableFile::Append(const void* data, size_t n) {
  if (fd_ < 0) return FailedPreconditionError("append to closed file " + path_);
  const char* p = static_cast<const char*>(data);
  if (direct_) {
    Status s = AppendDirect(p, n);
    if (s.ok()) size_ += n;
    return s;
  }
  size_ += n;
  if (buffered_ + n <= kBufferSize) {
    if (buffer_.empty()) buffer_.resize(kBufferSize);
    std::memcpy(buffer_.data() + buffered_, p, n);
    buffered_ += n;
    return Status::OK();
  }
  TROUPE_RETURN_IF_ERROR(Flush());
  if (n >= kBufferSize) return WriteRaw(p, n);
  if (buffer_.empty()) buffer_.resize(kBufferSize);
  std::memcpy(buffer_.data(), p, n);
  buffered_ = n;
  return Status::OK();
}

Status WritableFile::Flush() {
  if (direct_) return Status::OK();  // only whole blocks can be written before the end
  if (buffered_ == 0) return Status::OK();
  size_t n = buffered_;
  buffered_ = 0;
  return WriteRaw(buffer_.data(), n);
}

Status WritableFile::Sync() {
  TROUPE_RETURN_IF_ERROR(direct_ ? FinishDirect() : Flush());
  if (::fdatasync(fd_) != 0) return IoError("cannot sync", path_, errno);
  return Status::OK();
}

Status WritableFile::Close() {
  if (fd_ < 0) return Status::OK();
  Status s = direct_ ? FinishDirect() : Flush();
  int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0 && s.ok()) s = IoError("cannot close", path_, errno);
  return s;
}

RandomAccessFile::RandomAccessFile(std::string path, int fd, uint64_t size)
    : path_(std::move(path)), fd_(fd), size_(size) {}

RandomAccessFile::~RandomAccessFile() {
  if (fd_ >= 0) ::close(fd_);
}

Result<std::unique_ptr<RandomAccessFile>> RandomAccessFile::Open(const std::string& path) {
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
  return std::unique_ptr<RandomAccessFile>(
      new RandomAccessFile(path, fd, static_cast<uint64_t>(st.st_size)));
}

Status RandomAccessFile::Read(uint64_t offset, size_t n, void* dst) const {
  char* p = static_cast<char*>(dst);
  uint64_t pos = offset;
  size_t left = n;
  while (left > 0) {
    ssize_t r = ::pread(fd_, p, std::min(left, kMaxIo), static_cast<off_t>(pos));
    if (r < 0) {
      if (errno == EINTR) continue;
      return IoError("cannot read", path_, errno);
    }
    if (r == 0) {
      return DataLossError(path_ + " ends at byte " + std::to_string(pos) + " but " +
                           std::to_string(n) + " bytes were expected from offset " +
                           std::to_string(offset) + " (truncated file)");
    }
    p += r;
    pos += static_cast<uint64_t>(r);
    left -= static_cast<size_t>(r);
  }
  return Status::OK();
}

Result<std::string> ReadFileToString(const std::string& path) {
  TROUPE_ASSIGN_OR_RETURN(auto file, RandomAccessFile::Open(path));
  std::string contents(file->size(), '\0');
  TROUPE_RETURN_IF_ERROR(file->Read(0, contents.size(), contents.data()));
  return contents;
}

Status WriteFileAtomically(const std::string& path, std::string_view contents) {
  std::string temp = path + TempSuffix();
  {
    TROUPE_ASSIGN_OR_RETURN(auto file, WritableFile::Create(temp));
    Status s = file->Append(contents);
    if (s.ok()) s = file->Sync();
    if (s.ok()) s = file->Close();
    if (!s.ok()) {
      (void)DeleteFile(temp);
      return s;
    }
  }
  Status s = RenameFile(temp, path);
  if (!s.ok()) {
    (void)DeleteFile(temp);
    return s;
  }
  return SyncDirectory(DirName(path));
}

bool FileExists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

bool IsDirectory(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

Result<uint64_t> FileSize(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return IoError("cannot stat", path, errno);
  return static_cast<uint64_t>(st.st_size);
}

Status DeleteFile(const std::string& path) {
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) return IoError("cannot delete", path, errno);
  return Status::OK();
}

Status RenameFile(const std::string& from, const std::string& to) {
  if (::rename(from.c_str(), to.c_str()) != 0) {
    return IoError("cannot rename " + from + " to", to, errno);
  }
  return Status::OK();
}

Status SyncDirectory(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return IoError("cannot open directory", dir, errno);
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  if (rc != 0) return IoError("cannot sync directory", dir, err);
  return Status::OK();
}

Status CreateDirectories(const std::string& dir) {
  if (dir.empty() || IsDirectory(dir)) return Status::OK();
  std::string parent = DirName(dir);
  if (parent != dir && parent != "." && parent != "/") {
    TROUPE_RETURN_IF_ERROR(CreateDirectories(parent));
  }
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return IoError("cannot create directory", dir, errno);
  }
  return Status::OK();
}

Result<std::vector<std::string>> ListDirectory(const std::string& dir) {
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
  // Unique across threads and processes writing into the same directory.
  static std::atomic<uint64_t> counter{0};
  thread_local std::mt19937_64 rng(
      std::random_device{}() ^ static_cast<uint64_t>(::getpid()) << 32 ^
      static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()));
  uint64_t value = rng() ^ counter.fetch_add(1);
  return std::string(kTempMarker) + std::to_string(value);
}

}  // namespace troupe::ckpt
