#include "input/file_io.h"

#include <fcntl.h>
#include <glob.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace troupe::input {
namespace {

Status ErrnoStatus(const std::string& what, const std::string& path, int err) {
  std::string msg = what + " " + path + ": " + std::strerror(err);
  if (err == ENOENT) return NotFoundError(msg);
  if (err == EACCES || err == EPERM) return PermissionDeniedError(msg);
  return UnknownError(msg);
}

// Raw file with one large buffer; refills with a single read() per buffer.
class FileInputStream final : public InputStream {
 public:
  FileInputStream(int fd, std::string path, size_t buffer_bytes)
      : fd_(fd), path_(std::move(path)), buffer_(std::max<size_t>(buffer_bytes, 4096)) {}
  ~FileInputStream() override { ::close(fd_); }

  Result<size_t> Read(void* dst, size_t n) override {
    auto* out = static_cast<char*>(dst);
    size_t done = 0;
    while (done < n) {
      if (pos_ == end_) {
        // Large requests bypass the buffer: one copy (kernel to caller), as dd does.
        if (n - done >= buffer_.size() / 4) {
          ssize_t got = ReadSome(out + done, n - done);
          if (got < 0) return ErrnoStatus("cannot read", path_, errno);
          if (got == 0) break;
          done += static_cast<size_t>(got);
          file_pos_ += static_cast<uint64_t>(got);
          continue;
        }
        ssize_t got = ReadSome(buffer_.data(), buffer_.size());
        if (got < 0) return ErrnoStatus("cannot read", path_, errno);
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
      return ErrnoStatus("cannot seek in", path_, errno);
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
      ssize_t r = ::read(fd_, dst + got, n - got);
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

class ZlibInputStream final : public InputStream {
 public:
  ZlibInputStream(std::unique_ptr<InputStream> raw, int window_bits, size_t buffer_bytes)
      : raw_(std::move(raw)),
        window_bits_(window_bits),
        in_(std::max<size_t>(buffer_bytes, 4096)),
        out_(std::max<size_t>(buffer_bytes, 4096)) {}
  ~ZlibInputStream() override {
    if (initialized_) inflateEnd(&z_);
  }

  Status Init() {
    std::memset(&z_, 0, sizeof(z_));
    if (inflateInit2(&z_, window_bits_) != Z_OK) {
      return InternalError("inflateInit2 failed for " + raw_->path());
    }
    initialized_ = true;
    return Status::OK();
  }

  Result<size_t> Read(void* dst, size_t n) override {
    auto* out = static_cast<char*>(dst);
    size_t done = 0;
    while (done < n) {
      if (out_pos_ == out_end_) {
        TROUPE_RETURN_IF_ERROR(Inflate());
        if (out_pos_ == out_end_) break;  // end of stream
      }
      size_t take = std::min(n - done, out_end_ - out_pos_);
      std::memcpy(out + done, out_.data() + out_pos_, take);
      out_pos_ += take;
      done += take;
      pos_ += take;
    }
    return done;
  }

  uint64_t Tell() const override { return pos_; }

  Status Seek(uint64_t offset) override {
    if (offset < pos_) {
      // Inflate cannot run backwards: restart the stream.
      TROUPE_RETURN_IF_ERROR(raw_->Seek(0));
      inflateEnd(&z_);
      initialized_ = false;
      TROUPE_RETURN_IF_ERROR(Init());
      pos_ = 0;
      out_pos_ = out_end_ = 0;
      stream_end_ = false;
    }
    std::vector<char> scratch(64 << 10);
    while (pos_ < offset) {
      size_t want = static_cast<size_t>(std::min<uint64_t>(scratch.size(), offset - pos_));
      TROUPE_ASSIGN_OR_RETURN(size_t got, Read(scratch.data(), want));
      if (got == 0) {
        return OutOfRangeError("cannot seek to offset " + std::to_string(offset) + " of " +
                               raw_->path() + ": the uncompressed stream has only " +
                               std::to_string(pos_) + " bytes");
      }
    }
    return Status::OK();
  }

  const std::string& path() const override { return raw_->path(); }

 private:
  // Produces the next chunk of uncompressed bytes into out_ (none at end of stream).
  Status Inflate() {
    out_pos_ = out_end_ = 0;
    while (out_end_ == 0 && !stream_end_) {
      if (z_.avail_in == 0) {
        TROUPE_ASSIGN_OR_RETURN(size_t got, raw_->Read(in_.data(), in_.size()));
        if (got == 0) {
          if (!saw_any_input_ || !at_member_boundary_) {
            return DataLossError("truncated compressed stream in " + raw_->path() +
                                 " at uncompressed offset " + std::to_string(pos_));
          }
          stream_end_ = true;
          break;
        }
        saw_any_input_ = true;
        z_.next_in = reinterpret_cast<Bytef*>(in_.data());
        z_.avail_in = static_cast<uInt>(got);
      }
      if (at_member_boundary_ && saw_member_) {
        // Bytes after a finished gzip member: another member follows (like `cat a.gz b.gz`).
        inflateReset(&z_);
      }
      at_member_boundary_ = false;
      z_.next_out = reinterpret_cast<Bytef*>(out_.data());
      z_.avail_out = static_cast<uInt>(out_.size());
      int rc = inflate(&z_, Z_NO_FLUSH);
      out_end_ = out_.size() - z_.avail_out;
      if (rc == Z_STREAM_END) {
        at_member_boundary_ = true;
        saw_member_ = true;
      } else if (rc == Z_BUF_ERROR && z_.avail_in == 0) {
        continue;  // needs more input
      } else if (rc != Z_OK) {
        return DataLossError("corrupt compressed data in " + raw_->path() +
                             " near uncompressed offset " + std::to_string(pos_ + out_end_) + ": " +
                             (z_.msg ? z_.msg : "zlib error " + std::to_string(rc)));
      }
    }
    return Status::OK();
  }

  std::unique_ptr<InputStream> raw_;
  int window_bits_;
  z_stream z_;
  bool initialized_ = false;
  std::vector<char> in_, out_;
  size_t out_pos_ = 0, out_end_ = 0;
  uint64_t pos_ = 0;
  bool stream_end_ = false;
  bool saw_any_input_ = false;
  bool at_member_boundary_ = false;
  bool saw_member_ = false;
};

class FileOutputStream final : public OutputStream {
 public:
  FileOutputStream(int fd, std::string path) : fd_(fd), path_(std::move(path)) {
    buffer_.reserve(kBufferBytes);
  }
  ~FileOutputStream() override {
    if (fd_ >= 0) (void)Close();
  }
  Status Append(std::string_view data) override {
    if (fd_ < 0) return FailedPreconditionError("append to closed file " + path_);
    if (buffer_.size() + data.size() > kBufferBytes) {
      TROUPE_RETURN_IF_ERROR(FlushBuffer());
      if (data.size() >= kBufferBytes) return WriteAll(data.data(), data.size());
    }
    buffer_.append(data);
    return Status::OK();
  }
  Status Flush() override {
    if (fd_ < 0) return FailedPreconditionError("flush of closed file " + path_);
    return FlushBuffer();
  }
  Status Close() override {
    if (fd_ < 0) return Status::OK();
    Status s = FlushBuffer();
    if (::close(fd_) != 0 && s.ok()) s = ErrnoStatus("cannot close", path_, errno);
    fd_ = -1;
    return s;
  }

 private:
  static constexpr size_t kBufferBytes = 4 << 20;
  Status FlushBuffer() {
    Status s = WriteAll(buffer_.data(), buffer_.size());
    buffer_.clear();
    return s;
  }
  Status WriteAll(const char* p, size_t n) {
    while (n > 0) {
      ssize_t w = ::write(fd_, p, n);
      if (w < 0) {
        if (errno == EINTR) continue;
        return ErrnoStatus("cannot write", path_, errno);
      }
      p += w;
      n -= static_cast<size_t>(w);
    }
    return Status::OK();
  }
  int fd_;
  std::string path_;
  std::string buffer_;
};

class ZlibOutputStream final : public OutputStream {
 public:
  ZlibOutputStream(std::unique_ptr<OutputStream> raw, std::string path, int window_bits,
                   const ZlibOptions& options)
      : raw_(std::move(raw)),
        path_(std::move(path)),
        window_bits_(window_bits),
        options_(options),
        out_(std::max<size_t>(options.buffer_bytes, 4096)) {}
  ~ZlibOutputStream() override {
    if (initialized_) (void)Close();
  }
  Status Init() {
    std::memset(&z_, 0, sizeof(z_));
    if (deflateInit2(&z_, options_.level, Z_DEFLATED, window_bits_, options_.mem_level,
                     Z_DEFAULT_STRATEGY) != Z_OK) {
      return InvalidArgumentError("deflateInit2 failed for " + path_ + " (level " +
                                  std::to_string(options_.level) + ")");
    }
    initialized_ = true;
    return Status::OK();
  }
  Status Append(std::string_view data) override {
    if (!initialized_) return FailedPreconditionError("append to closed file " + path_);
    z_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
    z_.avail_in = static_cast<uInt>(data.size());
    return Deflate(Z_NO_FLUSH);
  }
  Status Flush() override {
    if (!initialized_) return FailedPreconditionError("flush of closed file " + path_);
    TROUPE_RETURN_IF_ERROR(Deflate(Z_SYNC_FLUSH));
    return raw_->Flush();
  }
  Status Close() override {
    if (!initialized_) return Status::OK();
    Status s = Deflate(Z_FINISH);
    deflateEnd(&z_);
    initialized_ = false;
    Status c = raw_->Close();
    return s.ok() ? c : s;
  }

 private:
  Status Deflate(int flush) {
    while (true) {
      z_.next_out = reinterpret_cast<Bytef*>(out_.data());
      z_.avail_out = static_cast<uInt>(out_.size());
      int rc = deflate(&z_, flush);
      if (rc == Z_STREAM_ERROR) return InternalError("deflate failed for " + path_);
      size_t have = out_.size() - z_.avail_out;
      if (have > 0) TROUPE_RETURN_IF_ERROR(raw_->Append({out_.data(), have}));
      if (flush == Z_FINISH) {
        if (rc == Z_STREAM_END) break;
      } else if (z_.avail_in == 0 && z_.avail_out != 0) {
        break;
      }
    }
    return Status::OK();
  }
  std::unique_ptr<OutputStream> raw_;
  std::string path_;
  int window_bits_;
  ZlibOptions options_;
  z_stream z_;
  bool initialized_ = false;
  std::vector<char> out_;
};

int WindowBits(Compression c) { return c == Compression::kGzip ? MAX_WBITS + 16 : MAX_WBITS; }

Result<std::unique_ptr<InputStream>> OpenRaw(const std::string& path, size_t buffer_bytes) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus("cannot open", path, errno);
  struct stat st;
  if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    ::close(fd);
    return InvalidArgumentError(path + " is a directory, not a file");
  }
  (void)::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  return std::unique_ptr<InputStream>(new FileInputStream(fd, path, buffer_bytes));
}

}  // namespace

Result<Compression> CompressionFromName(std::string_view name) {
  if (name.empty() || name == "NONE") return Compression::kNone;
  if (name == "ZLIB") return Compression::kZlib;
  if (name == "GZIP") return Compression::kGzip;
  return InvalidArgumentError("unknown compression type '" + std::string(name) +
                              "'; use \"\", \"ZLIB\" or \"GZIP\"");
}

std::string_view CompressionName(Compression c) {
  switch (c) {
    case Compression::kNone:
      return "";
    case Compression::kZlib:
      return "ZLIB";
    case Compression::kGzip:
      return "GZIP";
  }
  return "";
}

Result<std::unique_ptr<InputStream>> OpenInputStream(const std::string& path,
                                                     Compression compression, size_t buffer_bytes) {
  TROUPE_ASSIGN_OR_RETURN(auto raw, OpenRaw(path, buffer_bytes));
  if (compression == Compression::kNone) return raw;
  auto z = std::make_unique<ZlibInputStream>(std::move(raw), WindowBits(compression),
                                             std::min<size_t>(buffer_bytes, 1 << 20));
  TROUPE_RETURN_IF_ERROR(z->Init());
  return std::unique_ptr<InputStream>(std::move(z));
}

Result<std::unique_ptr<InputStream>> OpenMaybeGzipped(const std::string& path,
                                                      size_t buffer_bytes) {
  TROUPE_ASSIGN_OR_RETURN(auto raw, OpenRaw(path, buffer_bytes));
  unsigned char magic[2] = {0, 0};
  TROUPE_ASSIGN_OR_RETURN(size_t got, raw->Read(magic, 2));
  TROUPE_RETURN_IF_ERROR(raw->Seek(0));
  if (got == 2 && magic[0] == 0x1f && magic[1] == 0x8b) {
    auto z = std::make_unique<ZlibInputStream>(std::move(raw), WindowBits(Compression::kGzip),
                                               std::min<size_t>(buffer_bytes, 1 << 20));
    TROUPE_RETURN_IF_ERROR(z->Init());
    return std::unique_ptr<InputStream>(std::move(z));
  }
  return raw;
}

Result<std::unique_ptr<OutputStream>> OpenOutputStream(const std::string& path,
                                                       Compression compression,
                                                       const ZlibOptions& zlib) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoStatus("cannot create", path, errno);
  std::unique_ptr<OutputStream> raw(new FileOutputStream(fd, path));
  if (compression == Compression::kNone) return raw;
  auto z = std::make_unique<ZlibOutputStream>(std::move(raw), path, WindowBits(compression), zlib);
  TROUPE_RETURN_IF_ERROR(z->Init());
  return std::unique_ptr<OutputStream>(std::move(z));
}

Result<std::string> ReadFileToString(const std::string& path) {
  TROUPE_ASSIGN_OR_RETURN(auto in, OpenRaw(path, 1 << 20));
  std::string out;
  char buf[1 << 16];
  while (true) {
    TROUPE_ASSIGN_OR_RETURN(size_t got, in->Read(buf, sizeof(buf)));
    if (got == 0) break;
    out.append(buf, got);
  }
  return out;
}

Status WriteStringToFile(const std::string& path, std::string_view data) {
  TROUPE_ASSIGN_OR_RETURN(auto out, OpenOutputStream(path, Compression::kNone));
  TROUPE_RETURN_IF_ERROR(out->Append(data));
  return out->Close();
}

Result<std::vector<std::string>> MatchFiles(const std::string& pattern, const std::string& key) {
  if (pattern.empty()) return InvalidArgumentError(key + " is empty; give a glob of files");
  glob_t g{};
  const int rc = ::glob(pattern.c_str(), 0, nullptr, &g);
  std::vector<std::string> files;
  if (rc == 0) {
    for (size_t i = 0; i < g.gl_pathc; ++i) files.emplace_back(g.gl_pathv[i]);
  }
  globfree(&g);
  if (files.empty()) {
    return NotFoundError(key + " = \"" + pattern +
                         "\" matches no file (relative patterns start at the working "
                         "directory); check the path or the pattern");
  }
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace troupe::input
