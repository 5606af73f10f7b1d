// BundleReader: reads a TensorFlow v2 tensor bundle, whoever wrote it (TF, Troupe, Swift).
//
// Open() reads and verifies the whole `.index` (footer, every block crc, every entry) up front;
// tensor bytes are read on demand with pread straight into the destination buffer and checked
// against the entry's crc32c. Every corruption is a DataLoss and every missing file a NotFound,
// naming the file and the tensor. All const methods are safe to call from several threads.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "checkpoint/bundle_format.h"
#include "core/env.h"
#include "core/tensor.h"

namespace troupe::ckpt {

class BundleReader {
 public:
  // `prefix` is the path without ".index" (e.g. "run/ckpt-3").
  static Result<std::unique_ptr<BundleReader>> Open(std::string prefix);

  const std::string& prefix() const { return prefix_; }
  const BundleHeader& header() const { return header_; }
  // All tensor entries (the header and the slices of partitioned tensors excluded), sorted by
  // key; a partitioned tensor appears once, under its name, and reads as a whole.
  const std::vector<BundleEntry>& entries() const { return entries_; }
  const BundleEntry* Find(std::string_view key) const;
  bool Contains(std::string_view key) const { return Find(key) != nullptr; }

  // Reads a tensor into a new CPU tensor.
  Result<Tensor> Read(std::string_view key) const;
  // Reads into an existing CPU tensor of the same dtype and shape (e.g. a variable's buffer).
  Status ReadInto(std::string_view key, const Tensor& dst) const;
  // The stored bytes of any entry (also dtypes Troupe has no DType for), crc-checked.
  Result<std::string> ReadRaw(std::string_view key) const;
  // Checks that the entry's data file exists and holds its whole byte range (no data read).
  Status CheckAvailable(const BundleEntry& e) const;
  // Reads every tensor and checks every crc: OK only for a complete, intact bundle.
  Status VerifyAll() const;

 private:
  explicit BundleReader(std::string prefix) : prefix_(std::move(prefix)) {}
  Result<const BundleEntry*> Lookup(std::string_view key) const;
  Result<const RandomAccessFile*> ShardFile(const BundleEntry& e) const;
  // The shard file, after checking it holds the entry's whole byte range.
  Result<const RandomAccessFile*> CheckedShard(const BundleEntry& e) const;
  // Reads [offset, offset+size) of the entry's shard into dst, checking the range and the crc.
  Status ReadChecked(const BundleEntry& e, void* dst) const;
  Status ReadString(const BundleEntry& e, std::string* out) const;
  // The stored entry of one slice of partitioned tensor `e` (DataLoss when it is missing).
  Result<const BundleEntry*> SliceEntry(const BundleEntry& e, const TensorSliceSpec& spec) const;
  // Assembles a partitioned tensor from its slice entries.
  Status ReadSlices(const BundleEntry& e, const Tensor& dst) const;
  std::string Describe(const BundleEntry& e) const;

  std::string prefix_;
  BundleHeader header_;
  std::vector<BundleEntry> entries_;
  std::vector<BundleEntry> slice_entries_;  // stored slices of partitioned tensors, by key
  mutable std::mutex mu_;
  mutable std::vector<std::unique_ptr<RandomAccessFile>> shards_;
};

}  // namespace troupe::ckpt
