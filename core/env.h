// Env: the one seam between Troupe and the operating system's files (LevelDB's Env, TF's
// tensorflow::Env). Every library above core/ opens, writes, renames, lists and deletes files
// through an Env, so one policy holds everywhere and tests can wrap the default Env to inject
// faults (a write that fails half way, a full disk: tests/testutil/fault_env.h).
//
// Contract:
// - Every error is a Status whose message names the file (or directory) and the OS error, with
//   TF's canonical code: NotFound (ENOENT), PermissionDenied (EACCES, EPERM), ResourceExhausted
//   (ENOSPC, EDQUOT), AlreadyExists (EEXIST), Unknown for the rest; DataLoss for a file that
//   ends before the bytes a caller asked for.
// - Durability policy, the one in the tree: WriteFileAtomically writes a temporary file next to
//   the target (`<path>.tempstate<random>`), fdatasyncs it, renames it over the target and
//   fsyncs the directory. Readers see the old or the new contents, never a part, and once it
//   returns OK the new contents survive a power loss. On failure the temporary file is removed
//   and the target is untouched.
// - ReadFileToString, WriteStringToFile and WriteFileAtomically are built on the virtual
//   primitives, so an Env that wraps another (EnvWrapper) sees every step they take.
// - Env::Default() is a process-wide POSIX Env; it is thread-safe and never destroyed. File
//   objects are not thread-safe: one thread uses one file at a time.
//
// Usage:
//   Env* env = Env::Default();
//   TROUPE_ASSIGN_OR_RETURN(auto file, env->NewWritableFile(dir + "/data.bin"));
//   TROUPE_RETURN_IF_ERROR(file->Append(bytes));
//   TROUPE_RETURN_IF_ERROR(file->Sync());
//   TROUPE_RETURN_IF_ERROR(file->Close());
//   TROUPE_RETURN_IF_ERROR(env->WriteFileAtomically(dir + "/state", text));
//   TROUPE_ASSIGN_OR_RETURN(std::string back, env->ReadFileToString(dir + "/state"));
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "core/status.h"

namespace troupe {

inline constexpr size_t kDefaultReadBufferBytes = 4 << 20;  // 4 MiB per read() call

// A file read front to back through one large buffer (few, big, sequential requests to the
// kernel; requests of a quarter of the buffer or more bypass it).
class SequentialFile {
 public:
  virtual ~SequentialFile() = default;
  // Reads up to `n` bytes into `dst`; fewer only at the end of the file.
  virtual Result<size_t> Read(void* dst, size_t n) = 0;
  // Offset of the next byte Read returns.
  virtual uint64_t Tell() const = 0;
  // Moves to `offset` (within the buffered window without a system call).
  virtual Status Seek(uint64_t offset) = 0;
  virtual const std::string& path() const = 0;
};

// A file opened for positional reads; Read may be called from several threads at once.
class RandomAccessFile {
 public:
  virtual ~RandomAccessFile() = default;
  // Reads exactly `n` bytes at `offset`; DataLoss naming the file when it ends first.
  virtual Status Read(uint64_t offset, size_t n, void* dst) const = 0;
  virtual uint64_t size() const = 0;  // at open
  virtual const std::string& path() const = 0;
};

struct WritableFileOptions {
  // Keep the existing contents and add at the end (O_APPEND) instead of truncating.
  bool append = false;
  // Bypass the page cache (O_DIRECT): appends are copied into two aligned 8 MiB staging
  // buffers, one written by a helper thread while the other fills; Sync()/Close() write the
  // padded tail and trim the file to its size, and nothing may be appended after that. File
  // systems without O_DIRECT (tmpfs) silently get the buffered path. Not with `append`.
  bool direct_io = false;
  // Start writeback (sync_file_range, asynchronous) of every full `writeback_every` bytes, so a
  // final Sync() finds most data already on its way to the device. 0: never.
  uint64_t writeback_every = 0;
  // Appends collect in a buffer of this size; larger ones go to the kernel straight from the
  // caller's memory.
  size_t buffer_bytes = 1 << 20;
};

// A file being written. Close() (or the destructor, which ignores errors and does not sync)
// flushes the buffer; only Sync() makes the bytes durable.
class WritableFile {
 public:
  virtual ~WritableFile() = default;
  virtual Status Append(std::string_view data) = 0;
  Status Append(const void* data, size_t n) {
    return Append(std::string_view(static_cast<const char*>(data), n));
  }
  // Hands buffered bytes to the OS (a no-op for direct I/O until Sync/Close).
  virtual Status Flush() = 0;
  // Flush + fdatasync.
  virtual Status Sync() = 0;
  // Flushes and closes; later appends fail with FailedPrecondition. OK when already closed.
  virtual Status Close() = 0;
  virtual uint64_t size() const = 0;  // bytes appended through this object
  virtual const std::string& path() const = 0;
};

class Env {
 public:
  virtual ~Env() = default;

  // The POSIX Env (process-wide, never destroyed).
  static Env* Default();

  // REQUIRES: `path` names a regular file (a directory is InvalidArgument).
  virtual Result<std::unique_ptr<SequentialFile>> NewSequentialFile(
      const std::string& path, size_t buffer_bytes = kDefaultReadBufferBytes) = 0;
  // REQUIRES: `path` names a regular file (a directory is FailedPrecondition).
  virtual Result<std::unique_ptr<RandomAccessFile>> NewRandomAccessFile(
      const std::string& path) = 0;
  // Creates (or truncates, unless options.append) `path`; the directory must exist.
  virtual Result<std::unique_ptr<WritableFile>> NewWritableFile(
      const std::string& path, const WritableFileOptions& options = {}) = 0;

  virtual bool FileExists(const std::string& path) = 0;  // any kind of entry
  virtual bool IsDirectory(const std::string& path) = 0;
  virtual Result<uint64_t> GetFileSize(const std::string& path) = 0;
  // OK when `path` is already gone.
  virtual Status DeleteFile(const std::string& path) = 0;
  // `dir` and everything below it; OK when already gone.
  virtual Status DeleteRecursively(const std::string& dir) = 0;
  // rename(2): atomic replacement of `to` on one file system.
  virtual Status RenameFile(const std::string& from, const std::string& to) = 0;
  // fsync of a directory, making renames and creations in it durable.
  virtual Status SyncDirectory(const std::string& dir) = 0;
  // `dir` and its missing parents; OK when it exists.
  virtual Status CreateDirectories(const std::string& dir) = 0;
  // Names (not paths) of the entries in `dir` except "." and "..", sorted.
  virtual Result<std::vector<std::string>> GetChildren(const std::string& dir) = 0;
  // Paths matching the shell glob `pattern` (glob(3)), sorted; empty when none match.
  virtual Result<std::vector<std::string>> Glob(const std::string& pattern) = 0;

  // The whole file, read to its end (through NewSequentialFile, so kernel files whose size
  // reads 0 work too). NotFound when it does not exist.
  Result<std::string> ReadFileToString(const std::string& path);
  // Creates or truncates `path` and writes `data`; neither atomic nor synced (fixtures, logs
  // that are rewritten whole). Use WriteFileAtomically for anything a reader must trust.
  Status WriteStringToFile(const std::string& path, std::string_view data);
  // The tree's one atomic whole-file write; see the policy at the top of this header.
  Status WriteFileAtomically(const std::string& path, std::string_view contents);
};

// Forwards every call to another Env; a test Env overrides the calls it wants to break.
// REQUIRES: `target` outlives the wrapper.
class EnvWrapper : public Env {
 public:
  explicit EnvWrapper(Env* target) : target_(target) {}
  Env* target() const { return target_; }

  Result<std::unique_ptr<SequentialFile>> NewSequentialFile(const std::string& path,
                                                            size_t buffer_bytes) override {
    return target_->NewSequentialFile(path, buffer_bytes);
  }
  Result<std::unique_ptr<RandomAccessFile>> NewRandomAccessFile(const std::string& path) override {
    return target_->NewRandomAccessFile(path);
  }
  Result<std::unique_ptr<WritableFile>> NewWritableFile(
      const std::string& path, const WritableFileOptions& options) override {
    return target_->NewWritableFile(path, options);
  }
  bool FileExists(const std::string& path) override { return target_->FileExists(path); }
  bool IsDirectory(const std::string& path) override { return target_->IsDirectory(path); }
  Result<uint64_t> GetFileSize(const std::string& path) override {
    return target_->GetFileSize(path);
  }
  Status DeleteFile(const std::string& path) override { return target_->DeleteFile(path); }
  Status DeleteRecursively(const std::string& dir) override {
    return target_->DeleteRecursively(dir);
  }
  Status RenameFile(const std::string& from, const std::string& to) override {
    return target_->RenameFile(from, to);
  }
  Status SyncDirectory(const std::string& dir) override { return target_->SyncDirectory(dir); }
  Status CreateDirectories(const std::string& dir) override {
    return target_->CreateDirectories(dir);
  }
  Result<std::vector<std::string>> GetChildren(const std::string& dir) override {
    return target_->GetChildren(dir);
  }
  Result<std::vector<std::string>> Glob(const std::string& pattern) override {
    return target_->Glob(pattern);
  }

 private:
  Env* target_;
};

// Shorthands for the default Env.
inline Result<std::string> ReadFileToString(const std::string& path) {
  return Env::Default()->ReadFileToString(path);
}
inline Status WriteStringToFile(const std::string& path, std::string_view data) {
  return Env::Default()->WriteStringToFile(path, data);
}
inline Status WriteFileAtomically(const std::string& path, std::string_view contents) {
  return Env::Default()->WriteFileAtomically(path, contents);
}

// The Status for a failed system call: "<what> <path>: <strerror(err)>" with the code the
// contract above gives `err`.
Status IoError(std::string_view what, const std::string& path, int err);

// Paths.
std::string JoinPath(std::string_view dir, std::string_view name);
std::string DirName(std::string_view path);  // "." when there is no slash
std::string BaseName(std::string_view path);
// ".tempstate<random 64-bit number>", the suffix TF gives files not yet renamed into place;
// unique across threads and processes writing into one directory.
std::string TempSuffix();
inline constexpr std::string_view kTempMarker = ".tempstate";

}  // namespace troupe
