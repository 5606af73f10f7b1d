// POSIX file helpers for checkpoints: buffered appends that stream large buffers straight to
// the kernel, positional reads, fsync of files and directories, renames and listings. Every
// error is a Status naming the file and the system error.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "core/status.h"

namespace troupe::ckpt {

// A file opened for writing (created or truncated). Small appends collect in a buffer; appends
// at least as large as the buffer go to the kernel directly from the caller's memory.
//
// With direct_io the file bypasses the page cache (O_DIRECT): appends are copied into two
// aligned 8 MiB staging buffers, one written by a helper thread while the other fills, and
// Sync()/Close() write the padded tail and trim the file to its size; no appends after that.
// File systems without O_DIRECT (tmpfs) silently get the buffered path.
class WritableFile {
 public:
  static Result<std::unique_ptr<WritableFile>> Create(const std::string& path,
                                                      bool direct_io = false);
  ~WritableFile();  // closes without syncing if Close() was not called
  WritableFile(const WritableFile&) = delete;
  WritableFile& operator=(const WritableFile&) = delete;

  Status Append(const void* data, size_t n);
  Status Append(std::string_view data) { return Append(data.data(), data.size()); }
  Status Flush();
  Status Sync();  // Flush + fdatasync
  // Starts writeback of every full `bytes` written (sync_file_range, asynchronous), so a final
  // Sync() finds most data already on its way to the device instead of flushing it all then.
  void StartWritebackEvery(uint64_t bytes) { writeback_every_ = bytes; }
  Status Close();
  uint64_t size() const { return size_; }
  const std::string& path() const { return path_; }
  bool direct_io() const { return direct_ != nullptr; }

 private:
  struct Direct;
  WritableFile(std::string path, int fd);
  Status WriteRaw(const char* p, size_t n);
  Status AppendDirect(const char* p, size_t n);
  Status SubmitDirect(size_t len);
  Status FinishDirect();
  std::string path_;
  int fd_;
  uint64_t size_ = 0;
  uint64_t written_ = 0;            // bytes handed to the kernel
  uint64_t writeback_started_ = 0;  // bytes whose writeback was started
  uint64_t writeback_every_ = 0;
  std::vector<char> buffer_;
  size_t buffered_ = 0;
  std::unique_ptr<Direct> direct_;
};

// A file opened for positional reads.
class RandomAccessFile {
 public:
  static Result<std::unique_ptr<RandomAccessFile>> Open(const std::string& path);
  ~RandomAccessFile();
  RandomAccessFile(const RandomAccessFile&) = delete;
  RandomAccessFile& operator=(const RandomAccessFile&) = delete;

  // Reads exactly n bytes at `offset`; DataLoss when the file ends first.
  Status Read(uint64_t offset, size_t n, void* dst) const;
  uint64_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  RandomAccessFile(std::string path, int fd, uint64_t size);
  std::string path_;
  int fd_;
  uint64_t size_;
};

// The whole file; NotFound when it does not exist.
Result<std::string> ReadFileToString(const std::string& path);
// Writes `contents` to a temporary name next to `path`, syncs it, renames it over `path` and
// syncs the directory: readers see the old or the new file, never a partial one.
Status WriteFileAtomically(const std::string& path, std::string_view contents);

bool FileExists(const std::string& path);
bool IsDirectory(const std::string& path);
Result<uint64_t> FileSize(const std::string& path);
Status DeleteFile(const std::string& path);  // OK when already gone
Status RenameFile(const std::string& from, const std::string& to);
Status SyncDirectory(const std::string& dir);
Status CreateDirectories(const std::string& dir);
// Names (not paths) of the entries in `dir`, sorted.
Result<std::vector<std::string>> ListDirectory(const std::string& dir);

std::string JoinPath(std::string_view dir, std::string_view name);
std::string DirName(std::string_view path);  // "." when there is no slash
std::string BaseName(std::string_view path);
// ".tempstate<random 64-bit number>", the suffix TF uses for files not yet renamed in place.
std::string TempSuffix();
inline constexpr std::string_view kTempMarker = ".tempstate";

}  // namespace troupe::ckpt
