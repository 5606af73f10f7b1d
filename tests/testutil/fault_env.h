// FaultEnv: an Env (core/env.h) that breaks writes on purpose, for tests that show nothing
// durable is lost when the disk misbehaves. It wraps a real Env (the POSIX one by default)
// and forwards everything, except that once armed:
// - FailWritesAfter(n, err): writes go through until `n` more bytes have been written (over all
//   files whose path contains `match`); the append that crosses the limit writes the bytes
//   below it to the file, then fails with `err` ("cannot write <path>: <strerror>"), and so
//   does every later append, flush, sync and close of a matching file. A file half written.
// - DiskFull(): FailWritesAfter(0, ENOSPC): no byte more fits; creating a file still works,
//   as on a real full disk where the inode table has room.
// Heal() disarms it. Renames, deletes and directory syncs are never broken: the point is what
// a writer does when its data cannot be written.
//
// Usage:
//   testutil::FaultEnv env;
//   ckpt::SaveOptions save;
//   save.env = &env;
//   env.FailWritesAfter(100);   // the next checkpoint breaks 100 bytes in
//   EXPECT_FALSE(checkpoint.Write(prefix, save).ok());
#pragma once

#include <cerrno>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "core/env.h"

namespace troupe::testutil {

class FaultEnv : public EnvWrapper {
 public:
  explicit FaultEnv(Env* target = Env::Default()) : EnvWrapper(target) {}

  void FailWritesAfter(uint64_t bytes, int err = EIO, std::string match = "") {
    std::lock_guard<std::mutex> lock(mu_);
    armed_ = true;
    budget_ = bytes;
    err_ = err;
    match_ = std::move(match);
  }
  void DiskFull(std::string match = "") { FailWritesAfter(0, ENOSPC, std::move(match)); }
  void Heal() {
    std::lock_guard<std::mutex> lock(mu_);
    armed_ = false;
  }
  // Appends that failed since construction.
  int failures() const {
    std::lock_guard<std::mutex> lock(mu_);
    return failures_;
  }

  Result<std::unique_ptr<WritableFile>> NewWritableFile(
      const std::string& path, const WritableFileOptions& options) override {
    TROUPE_ASSIGN_OR_RETURN(auto file, target()->NewWritableFile(path, options));
    return std::unique_ptr<WritableFile>(new File(this, std::move(file)));
  }

 private:
  class File final : public WritableFile {
   public:
    File(FaultEnv* env, std::unique_ptr<WritableFile> file) : env_(env), file_(std::move(file)) {}
    using WritableFile::Append;
    Status Append(std::string_view data) override {
      TROUPE_RETURN_IF_ERROR(broken_);
      const size_t allowed = env_->Take(path(), data.size());
      if (allowed == data.size()) return file_->Append(data);
      // The part that fits lands in the file, as with a short write(2) before ENOSPC.
      (void)file_->Append(data.substr(0, allowed));
      (void)file_->Flush();
      broken_ = IoError("cannot write", path(), env_->err());
      return broken_;
    }
    Status Flush() override { return broken_.ok() ? file_->Flush() : broken_; }
    Status Sync() override { return broken_.ok() ? file_->Sync() : broken_; }
    Status Close() override {
      Status s = file_->Close();
      return broken_.ok() ? s : broken_;
    }
    uint64_t size() const override { return file_->size(); }
    const std::string& path() const override { return file_->path(); }

   private:
    FaultEnv* env_;
    std::unique_ptr<WritableFile> file_;
    Status broken_;
  };

  // How many of `n` bytes may still be written to `path`.
  size_t Take(const std::string& path, size_t n) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!armed_ || path.find(match_) == std::string::npos) return n;
    const size_t allowed = static_cast<size_t>(std::min<uint64_t>(budget_, n));
    budget_ -= allowed;
    if (allowed < n) ++failures_;
    return allowed;
  }
  int err() const {
    std::lock_guard<std::mutex> lock(mu_);
    return err_;
  }

  mutable std::mutex mu_;
  bool armed_ = false;
  uint64_t budget_ = 0;
  int err_ = EIO;
  std::string match_;
  int failures_ = 0;
};

}  // namespace troupe::testutil
