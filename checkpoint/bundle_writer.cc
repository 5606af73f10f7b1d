#include "checkpoint/bundle_writer.h"

#include <algorithm>
#include <thread>

#include "checkpoint/string_codec.h"
#include "core/crc32c.h"

namespace troupe::ckpt {
namespace {

// Tensor bytes go to the kernel in pieces this size: large writes cost the kernel less CPU per
// byte than many 1 MiB ones (measured here; larger page-cache folios). Below
// kParallelCrcMin the crc of each piece is computed just before it is written.
constexpr size_t kChunk = 16 << 20;
constexpr size_t kParallelCrcMin = 16 << 20;
// With sync on, writeback starts every this many bytes so the disk works while we copy.
constexpr uint64_t kWritebackEvery = 32 << 20;

}  // namespace

BundleWriter::BundleWriter(std::string prefix, BundleWriterOptions options)
    : prefix_(std::move(prefix)), options_(std::move(options)) {}

BundleWriter::~BundleWriter() {
  if (!finished_) RemoveTempFiles();
}

void BundleWriter::RemoveTempFiles() {
  for (Shard& s : shards_) {
    s.file.reset();
    (void)options_.env->DeleteFile(s.temp_path);
  }
}

Result<std::unique_ptr<BundleWriter>> BundleWriter::Create(std::string prefix,
                                                           BundleWriterOptions options) {
  if (prefix.empty() || prefix.back() == '/') {
    return InvalidArgumentError("checkpoint prefix '" + prefix +
                                "' must name files (e.g. dir/ckpt-1), not a directory");
  }
  if (options.num_shards < 1 || options.num_shards > kMaxShards) {
    return InvalidArgumentError("BundleWriter num_shards must be in 1.." +
                                std::to_string(kMaxShards) + ", got " +
                                std::to_string(options.num_shards));
  }
  TROUPE_RETURN_IF_ERROR(options.env->CreateDirectories(DirName(prefix)));
  std::unique_ptr<BundleWriter> w(new BundleWriter(std::move(prefix), std::move(options)));
  w->shards_.resize(static_cast<size_t>(w->options_.num_shards));
  for (int i = 0; i < w->options_.num_shards; ++i) {
    Shard& s = w->shards_[static_cast<size_t>(i)];
    s.final_path = DataFilename(w->prefix_, i, w->options_.num_shards);
    s.temp_path = s.final_path + TempSuffix();
    WritableFileOptions fo;
    fo.direct_io = w->options_.direct_io;
    if (w->options_.sync) fo.writeback_every = kWritebackEvery;
    TROUPE_ASSIGN_OR_RETURN(s.file, w->options_.env->NewWritableFile(s.temp_path, fo));
  }
  return w;
}

uint64_t BundleWriter::bytes_written() const {
  uint64_t total = 0;
  for (const Shard& s : shards_) total += s.file ? s.file->size() : 0;
  return total;
}

Status BundleWriter::Fail(Status s) {
  if (error_.ok()) error_ = s;
  return s;
}

Status BundleWriter::CheckKey(std::string_view key, int shard) {
  if (finished_) return FailedPreconditionError("BundleWriter for " + prefix_ + " is finished");
  TROUPE_RETURN_IF_ERROR(error_);
  if (key.empty()) {
    return InvalidArgumentError("tensor key must not be empty (the empty key holds the header)");
  }
  if (entries_.count(key) != 0) {
    return InvalidArgumentError("tensor '" + std::string(key) + "' was already added to " +
                                prefix_);
  }
  if (shard < 0 || shard >= num_shards()) {
    return InvalidArgumentError("shard " + std::to_string(shard) + " for tensor '" +
                                std::string(key) + "' is outside 0.." +
                                std::to_string(num_shards() - 1));
  }
  return Status::OK();
}

Status BundleWriter::Record(BundleEntry entry) {
  std::string key = entry.key;
  entries_.emplace(std::move(key), std::move(entry));
  return Status::OK();
}

Status BundleWriter::Add(std::string_view key, const Tensor& tensor) {
  int best = 0;
  for (int i = 1; i < num_shards(); ++i) {
    if (shards_[static_cast<size_t>(i)].file->size() <
        shards_[static_cast<size_t>(best)].file->size()) {
      best = i;
    }
  }
  return AddToShard(key, tensor, best);
}

Status BundleWriter::AddToShard(std::string_view key, const Tensor& tensor, int shard) {
  TROUPE_RETURN_IF_ERROR(CheckKey(key, shard));
  if (!tensor.initialized()) {
    return InvalidArgumentError("tensor '" + std::string(key) + "' is uninitialized");
  }
  if (!tensor.device().is_cpu()) {
    return InvalidArgumentError("tensor '" + std::string(key) + "' lives on " +
                                tensor.device().ToString() +
                                "; copy it to the CPU or use AddChunked");
  }
  WritableFile* file = shards_[static_cast<size_t>(shard)].file.get();
  BundleEntry e;
  e.key = std::string(key);
  e.dtype = tensor.dtype();
  e.dtype_number = static_cast<int>(tensor.dtype());
  e.shape = tensor.shape();
  e.shard_id = shard;
  e.offset = static_cast<int64_t>(file->size());
  uint32_t crc = 0;
  if (tensor.dtype() == DType::kString) {
    const std::string* strings = tensor.data<std::string>();
    StringPrefix prefix = EncodeStringPrefix(strings, tensor.num_elements());
    crc = prefix.running_crc;
    Status s = file->Append(prefix.bytes);
    for (int64_t i = 0; s.ok() && i < tensor.num_elements(); ++i) {
      crc = crc32c::Extend(crc, strings[i].data(), strings[i].size());
      s = file->Append(strings[i]);
    }
    if (!s.ok()) return Fail(s);
    e.size = static_cast<int64_t>(prefix.total_size);
  } else {
    const char* p = static_cast<const char*>(tensor.raw_data());
    const size_t n = tensor.byte_size();
    // Large tensors: the crc runs on a helper thread over the same memory while this thread
    // hands the bytes to the kernel; the tensor is read twice but never copied in user space.
    std::thread checker;
    if (n >= kParallelCrcMin) checker = std::thread([&] { crc = crc32c::Value(p, n); });
    Status s;
    for (size_t done = 0; done < n && s.ok();) {
      size_t len = std::min(kChunk, n - done);
      if (!checker.joinable()) crc = crc32c::Extend(crc, p + done, len);
      s = file->Append(p + done, len);
      done += len;
    }
    if (checker.joinable()) checker.join();
    if (!s.ok()) return Fail(s);
    e.size = static_cast<int64_t>(n);
  }
  e.masked_crc32c = crc32c::Mask(crc);
  return Record(std::move(e));
}

Status BundleWriter::AddChunked(std::string_view key, DType dtype, const TensorShape& shape,
                                int shard,
                                const std::function<Status(const ChunkWriter& write)>& produce) {
  TROUPE_RETURN_IF_ERROR(CheckKey(key, shard));
  if (DTypeSize(dtype) == 0) {
    return InvalidArgumentError("AddChunked needs a fixed-size dtype, got " +
                                std::string(DTypeName(dtype)) + " for '" + std::string(key) + "'");
  }
  TROUPE_ASSIGN_OR_RETURN(TensorShape checked, TensorShape::FromDims(shape.dims()));
  if (!checked.IsFullyDefined()) {
    return InvalidArgumentError("AddChunked needs a fully defined shape for '" + std::string(key) +
                                "', got " + shape.ToString());
  }
  const uint64_t expected = static_cast<uint64_t>(checked.num_elements()) * DTypeSize(dtype);
  WritableFile* file = shards_[static_cast<size_t>(shard)].file.get();
  BundleEntry e;
  e.key = std::string(key);
  e.dtype = dtype;
  e.dtype_number = static_cast<int>(dtype);
  e.shape = checked;
  e.shard_id = shard;
  e.offset = static_cast<int64_t>(file->size());
  uint32_t crc = 0;
  uint64_t got = 0;
  Status s = produce([&](const void* data, size_t n) -> Status {
    if (got + n > expected) {
      return InvalidArgumentError("AddChunked for '" + std::string(key) + "' received more than " +
                                  std::to_string(expected) + " bytes");
    }
    crc = crc32c::Extend(crc, data, n);
    got += n;
    return file->Append(data, n);
  });
  if (s.ok() && got != expected) {
    s = InvalidArgumentError("AddChunked for '" + std::string(key) + "' received " +
                             std::to_string(got) + " bytes, expected " + std::to_string(expected));
  }
  // The shard now holds a partial tensor, so the bundle cannot be finished.
  if (!s.ok()) return Fail(s);
  e.size = static_cast<int64_t>(expected);
  e.masked_crc32c = crc32c::Mask(crc);
  return Record(std::move(e));
}

Status BundleWriter::Finish() {
  if (finished_) return FailedPreconditionError("BundleWriter for " + prefix_ + " is finished");
  TROUPE_RETURN_IF_ERROR(error_);
  for (Shard& s : shards_) {
    Status st = options_.sync ? s.file->Sync() : s.file->Flush();
    if (st.ok()) st = s.file->Close();
    if (!st.ok()) return Fail(st);
  }
  // The index: header first (key ""), then the entries in key order.
  TableWriter table(options_.index);
  BundleHeader header;
  header.num_shards = num_shards();
  TROUPE_RETURN_IF_ERROR(Fail(table.Add(kHeaderKey, EncodeBundleHeader(header))));
  for (const auto& [key, entry] : entries_) {
    Status st = table.Add(key, EncodeBundleEntry(entry));
    if (!st.ok()) return Fail(st);
  }
  auto index = table.Finish();
  if (!index.ok()) return Fail(index.status());
  const std::string index_path = IndexFilename(prefix_);
  const std::string index_temp = index_path + TempSuffix();
  {
    auto file = options_.env->NewWritableFile(index_temp);
    if (!file.ok()) return Fail(file.status());
    Status st = (*file)->Append(*index);
    if (st.ok() && options_.sync) st = (*file)->Sync();
    if (st.ok()) st = (*file)->Close();
    if (!st.ok()) {
      (void)options_.env->DeleteFile(index_temp);
      return Fail(st);
    }
  }
  // An old index at this prefix goes first: until the new one lands the prefix holds no
  // checkpoint at all, rather than an old index next to new data.
  Status st = options_.env->DeleteFile(index_path);
  for (Shard& s : shards_) {
    if (st.ok()) st = options_.env->RenameFile(s.temp_path, s.final_path);
  }
  if (st.ok()) st = options_.env->RenameFile(index_temp, index_path);
  if (st.ok() && options_.sync) st = options_.env->SyncDirectory(DirName(prefix_));
  if (!st.ok()) {
    (void)options_.env->DeleteFile(index_temp);
    return Fail(st);
  }
  finished_ = true;
  return Status::OK();
}

}  // namespace troupe::ckpt
