// The POSIX files behind core/env.h's PosixEnv: buffered sequential reads, positional reads
// and buffered writes (optionally O_DIRECT, with writeback started as it goes).
#include "core/internal/posix_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace troupe::internal {
namespace {

// Large writes and reads go through the kernel in pieces of this size, so a slow device or a
// signal never leaves a huge single syscall half done without progress.
constexpr size_t kMaxIo = 64 << 20;
// O_DIRECT staging: buffers and offsets aligned to the largest common logical block size.
constexpr size_t kDirectAlign = 4096;
constexpr size_t kDirectBuffer = 8 << 20;

// ---- sequential reads ---------------------------------------------------------------------

// One large buffer; refills with a single read() per buffer.
class PosixSequentialFile final : public SequentialFile {
 public:
  PosixSequentialFile(int fd, std::string path, size_t buffer_bytes)
      : fd_(fd), path_(std::move(path)), buffer_(std::max<size_t>(buffer_bytes, 4096)) {}
  ~PosixSequentialFile() override { ::close(fd_); }

  Result<size_t> Read(void* dst, size_t n) override {
    auto* out = static_cast<char*>(dst);
    size_t done = 0;
    while (done < n) {
      if (pos_ == end_) {
        // Large requests bypass the buffer: one copy (kernel to caller), as dd does.
        if (n - done >= buffer_.size() / 4) {
          ssize_t got = ReadSome(out + done, n - done);
          if (got < 0) return IoError("cannot read", path_, errno);
          if (got == 0) break;
          done += static_cast<size_t>(got);
          file_pos_ += static_cast<uint64_t>(got);
          continue;
        }
        ssize_t got = ReadSome(buffer_.data(), buffer_.size());
        if (got < 0) return IoError("cannot read", path_, errno);
        if (got == 0) break;
        pos_ = 0;
        end_ = static_cast<size_t>(got);
        file_pos_ += static_cast<uint64_t>(got);
      }
      size_t take = std::min(n - done, end_ - pos_);
      std::memcpy(out + done, buffer_.data() + pos_, take);
      pos_ += take;
      done += take;
    }
    return done;
  }

  uint64_t Tell() const override { return file_pos_ - (end_ - pos_); }

  Status Seek(uint64_t offset) override {
    // Within the buffered window: just move the cursor.
    uint64_t window_start = file_pos_ - end_;
    if (offset >= window_start && offset <= file_pos_) {
      pos_ = static_cast<size_t>(offset - window_start);
      return Status::OK();
    }
    if (::lseek(fd_, static_cast<off_t>(offset), SEEK_SET) < 0) {
      return IoError("cannot seek in", path_, errno);
    }
    file_pos_ = offset;
    pos_ = end_ = 0;
    return Status::OK();
  }

  const std::string& path() const override { return path_; }

 private:
  ssize_t ReadSome(char* dst, size_t n) {
    // Fill as much as possible: short reads are retried so callers see big chunks.
    size_t got = 0;
    while (got < n) {
      ssize_t r = ::read(fd_, dst + got, std::min(n - got, kMaxIo));
      if (r < 0) {
        if (errno == EINTR) continue;
        return -1;
      }
      if (r == 0) break;
      got += static_cast<size_t>(r);
    }
    return static_cast<ssize_t>(got);
  }

  int fd_;
  std::string path_;
  std::vector<char> buffer_;
  size_t pos_ = 0, end_ = 0;
  uint64_t file_pos_ = 0;  // file offset just past the buffered bytes
};

// ---- positional reads ---------------------------------------------------------------------

class PosixRandomAccessFile final : public RandomAccessFile {
 public:
  PosixRandomAccessFile(std::string path, int fd, uint64_t size)
      : path_(std::move(path)), fd_(fd), size_(size) {}
  ~PosixRandomAccessFile() override { ::close(fd_); }

  Status Read(uint64_t offset, size_t n, void* dst) const override {
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
  uint64_t size() const override { return size_; }
  const std::string& path() const override { return path_; }

 private:
  std::string path_;
  int fd_;
  uint64_t size_;
};

// ---- writes -------------------------------------------------------------------------------

class PosixWritableFile final : public WritableFile {
 public:
  PosixWritableFile(std::string path, int fd, const WritableFileOptions& options)
      : path_(std::move(path)),
        fd_(fd),
        buffer_bytes_(std::max<size_t>(options.buffer_bytes, 4096)),
        writeback_every_(options.writeback_every) {}

  ~PosixWritableFile() override {
    if (direct_) (void)direct_->Wait();
    if (fd_ >= 0) {
      (void)(direct_ ? FinishDirect() : Flush());
      ::close(fd_);
    }
  }

  // Allocates the O_DIRECT staging buffers.
  Status EnableDirect() {
    direct_ = std::make_unique<Direct>();
    for (auto& b : direct_->buffers) {
      b.reset(static_cast<char*>(std::aligned_alloc(kDirectAlign, kDirectBuffer)));
      if (!b) return ResourceExhaustedError("no memory for direct-I/O buffers of " + path_);
    }
    return Status::OK();
  }

  using WritableFile::Append;
  Status Append(std::string_view data) override {
    if (fd_ < 0) return FailedPreconditionError("append to closed file " + path_);
    const char* p = data.data();
    const size_t n = data.size();
    if (direct_) {
      Status s = AppendDirect(p, n);
      if (s.ok()) size_ += n;
      return s;
    }
    size_ += n;
    if (buffered_ + n <= buffer_bytes_) {
      if (buffer_.empty()) buffer_.resize(buffer_bytes_);
      std::memcpy(buffer_.data() + buffered_, p, n);
      buffered_ += n;
      return Status::OK();
    }
    TROUPE_RETURN_IF_ERROR(Flush());
    if (n >= buffer_bytes_) return WriteRaw(p, n);
    if (buffer_.empty()) buffer_.resize(buffer_bytes_);
    std::memcpy(buffer_.data(), p, n);
    buffered_ = n;
    return Status::OK();
  }

  Status Flush() override {
    if (fd_ < 0) return FailedPreconditionError("flush of closed file " + path_);
    if (direct_) return Status::OK();  // only whole blocks can be written before the end
    if (buffered_ == 0) return Status::OK();
    size_t n = buffered_;
    buffered_ = 0;
    return WriteRaw(buffer_.data(), n);
  }

  Status Sync() override {
    if (fd_ < 0) return FailedPreconditionError("sync of closed file " + path_);
    TROUPE_RETURN_IF_ERROR(direct_ ? FinishDirect() : Flush());
    if (::fdatasync(fd_) != 0) return IoError("cannot sync", path_, errno);
    return Status::OK();
  }

  Status Close() override {
    if (fd_ < 0) return Status::OK();
    Status s = direct_ ? FinishDirect() : Flush();
    int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0 && s.ok()) s = IoError("cannot close", path_, errno);
    return s;
  }

  uint64_t size() const override { return size_; }
  const std::string& path() const override { return path_; }

 private:
  struct Direct {
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

  Status WriteRaw(const char* p, size_t n) {
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

  // Hands the current staging buffer (len bytes, a multiple of kDirectAlign) to a helper thread.
  Status SubmitDirect(size_t len) {
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

  Status AppendDirect(const char* p, size_t n) {
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

  Status FinishDirect() {
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

  std::string path_;
  int fd_;
  size_t buffer_bytes_;
  uint64_t size_ = 0;
  uint64_t written_ = 0;            // bytes handed to the kernel
  uint64_t writeback_started_ = 0;  // bytes whose writeback was started
  uint64_t writeback_every_ = 0;
  std::vector<char> buffer_;
  size_t buffered_ = 0;
  std::unique_ptr<Direct> direct_;
};

}  // namespace

std::unique_ptr<SequentialFile> NewPosixSequentialFile(int fd, std::string path,
                                                       size_t buffer_bytes) {
  return std::make_unique<PosixSequentialFile>(fd, std::move(path), buffer_bytes);
}

std::unique_ptr<RandomAccessFile> NewPosixRandomAccessFile(std::string path, int fd,
                                                           uint64_t size) {
  return std::make_unique<PosixRandomAccessFile>(std::move(path), fd, size);
}

Result<std::unique_ptr<WritableFile>> NewPosixWritableFile(std::string path, int fd,
                                                           const WritableFileOptions& options,
                                                           bool direct) {
  auto file = std::make_unique<PosixWritableFile>(std::move(path), fd, options);
  if (direct) TROUPE_RETURN_IF_ERROR(file->EnableDirect());
  return std::unique_ptr<WritableFile>(std::move(file));
}

}  // namespace troupe::internal
