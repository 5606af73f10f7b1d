#include "input/file_io.h"

#include <zlib.h>

#include <algorithm>
#include <cstring>

namespace troupe::input {
namespace {

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

class ZlibOutputStream final : public OutputStream {
 public:
  ZlibOutputStream(std::unique_ptr<WritableFile> raw, int window_bits, const ZlibOptions& options)
      : raw_(std::move(raw)),
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
      return InvalidArgumentError("deflateInit2 failed for " + path() + " (level " +
                                  std::to_string(options_.level) + ")");
    }
    initialized_ = true;
    return Status::OK();
  }
  using WritableFile::Append;
  Status Append(std::string_view data) override {
    if (!initialized_) return FailedPreconditionError("append to closed file " + path());
    z_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
    z_.avail_in = static_cast<uInt>(data.size());
    size_ += data.size();
    return Deflate(Z_NO_FLUSH);
  }
  Status Flush() override {
    if (!initialized_) return FailedPreconditionError("flush of closed file " + path());
    TROUPE_RETURN_IF_ERROR(Deflate(Z_SYNC_FLUSH));
    return raw_->Flush();
  }
  Status Sync() override {
    TROUPE_RETURN_IF_ERROR(Flush());
    return raw_->Sync();
  }
  Status Close() override {
    if (!initialized_) return Status::OK();
    Status s = Deflate(Z_FINISH);
    deflateEnd(&z_);
    initialized_ = false;
    Status c = raw_->Close();
    return s.ok() ? c : s;
  }
  uint64_t size() const override { return size_; }
  const std::string& path() const override { return raw_->path(); }

 private:
  Status Deflate(int flush) {
    while (true) {
      z_.next_out = reinterpret_cast<Bytef*>(out_.data());
      z_.avail_out = static_cast<uInt>(out_.size());
      int rc = deflate(&z_, flush);
      if (rc == Z_STREAM_ERROR) return InternalError("deflate failed for " + path());
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

  std::unique_ptr<WritableFile> raw_;
  int window_bits_;
  uint64_t size_ = 0;  // uncompressed bytes appended
  ZlibOptions options_;
  z_stream z_;
  bool initialized_ = false;
  std::vector<char> out_;
};

int WindowBits(Compression c) { return c == Compression::kGzip ? MAX_WBITS + 16 : MAX_WBITS; }

Result<std::unique_ptr<InputStream>> OpenRaw(const std::string& path, size_t buffer_bytes) {
  return Env::Default()->NewSequentialFile(path, buffer_bytes);
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
  // A 4 MiB buffer: few, large write() calls for record files.
  TROUPE_ASSIGN_OR_RETURN(auto file,
                          Env::Default()->NewWritableFile(path, {.buffer_bytes = 4 << 20}));
  std::unique_ptr<OutputStream> raw = std::move(file);
  if (compression == Compression::kNone) return raw;
  auto z = std::make_unique<ZlibOutputStream>(std::move(raw), WindowBits(compression), zlib);
  TROUPE_RETURN_IF_ERROR(z->Init());
  return std::unique_ptr<OutputStream>(std::move(z));
}

Result<std::vector<std::string>> MatchFiles(const std::string& pattern, const std::string& key) {
  if (pattern.empty()) return InvalidArgumentError(key + " is empty; give a glob of files");
  TROUPE_ASSIGN_OR_RETURN(std::vector<std::string> files, Env::Default()->Glob(pattern));
  if (files.empty()) {
    return NotFoundError(key + " = \"" + pattern +
                         "\" matches no file (relative patterns start at the working "
                         "directory); check the path or the pattern");
  }
  return files;  // sorted by the Env
}

}  // namespace troupe::input
