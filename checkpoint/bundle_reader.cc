#include "checkpoint/bundle_reader.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <thread>

#include "checkpoint/string_codec.h"
#include "checkpoint/table.h"
#include "core/crc32c.h"

namespace troupe::ckpt {
namespace {

constexpr size_t kChunk = 4 << 20;
// From this size on, checksumming overlaps reading (one helper thread per tensor).
constexpr size_t kPipelineMin = 16 << 20;
constexpr int kVariantDType = 21;

std::string Hex(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "0x%08x", v);
  return buf;
}

}  // namespace

Result<std::unique_ptr<BundleReader>> BundleReader::Open(std::string prefix) {
  const std::string index_path = IndexFilename(prefix);
  auto contents = ReadFileToString(index_path);
  if (!contents.ok()) {
    if (contents.status().code() == StatusCode::kNotFound) {
      return NotFoundError("no checkpoint at '" + prefix + "': " + index_path +
                           " does not exist (pass a checkpoint prefix such as dir/ckpt-3, or a "
                           "directory with a `checkpoint` state file)");
    }
    return contents.status();
  }
  TROUPE_ASSIGN_OR_RETURN(BundleIndex index, ParseBundleIndex(*contents, index_path));
  if (!index.header.little_endian) {
    return UnimplementedError("checkpoint " + index_path +
                              " was written on a big-endian machine; byte swapping is not "
                              "supported");
  }
  std::unique_ptr<BundleReader> r(new BundleReader(std::move(prefix)));
  r->header_ = index.header;
  r->entries_ = std::move(index.entries);
  r->slice_entries_ = std::move(index.slice_entries);
  r->shards_.resize(static_cast<size_t>(r->header_.num_shards));
  return r;
}

const BundleEntry* BundleReader::Find(std::string_view key) const {
  auto it = std::lower_bound(entries_.begin(), entries_.end(), key,
                             [](const BundleEntry& e, std::string_view k) { return e.key < k; });
  return it != entries_.end() && it->key == key ? &*it : nullptr;
}

Result<const BundleEntry*> BundleReader::Lookup(std::string_view key) const {
  const BundleEntry* e = Find(key);
  if (e == nullptr) {
    return NotFoundError("tensor '" + std::string(key) + "' is not in checkpoint " + prefix_ +
                         " (" + std::to_string(entries_.size()) +
                         " tensors; list them with "
                         "`troupe ckpt ls " +
                         prefix_ + "`)");
  }
  return e;
}

std::string BundleReader::Describe(const BundleEntry& e) const {
  return "tensor '" + e.key + "' in " + DataFilename(prefix_, e.shard_id, header_.num_shards);
}

Result<const RandomAccessFile*> BundleReader::ShardFile(const BundleEntry& e) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto& slot = shards_[static_cast<size_t>(e.shard_id)];
  if (!slot) {
    std::string path = DataFilename(prefix_, e.shard_id, header_.num_shards);
    auto file = Env::Default()->NewRandomAccessFile(path);
    if (!file.ok()) {
      if (file.status().code() == StatusCode::kNotFound) {
        return NotFoundError(
            "checkpoint data file " + path + " is missing (shard " + std::to_string(e.shard_id) +
            " of " + std::to_string(header_.num_shards) + ", needed for tensor '" + e.key + "')");
      }
      return file.status().WithContext("reading tensor '" + e.key + "'");
    }
    slot = std::move(*file);
  }
  return slot.get();
}

Result<const RandomAccessFile*> BundleReader::CheckedShard(const BundleEntry& e) const {
  TROUPE_ASSIGN_OR_RETURN(const RandomAccessFile* file, ShardFile(e));
  const uint64_t end = static_cast<uint64_t>(e.offset) + static_cast<uint64_t>(e.size);
  if (end > file->size()) {
    return DataLossError(Describe(e) + ": needs bytes [" + std::to_string(e.offset) + ", " +
                         std::to_string(end) + ") but the file has only " +
                         std::to_string(file->size()) + " bytes (truncated)");
  }
  return file;
}

Result<const BundleEntry*> BundleReader::SliceEntry(const BundleEntry& e,
                                                    const TensorSliceSpec& spec) const {
  const std::string key = SliceKey(e.key, spec);
  auto it = std::lower_bound(slice_entries_.begin(), slice_entries_.end(), key,
                             [](const BundleEntry& x, const std::string& k) { return x.key < k; });
  if (it == slice_entries_.end() || it->key != key) {
    return DataLossError("checkpoint " + prefix_ + ": tensor '" + e.key +
                         "' is partitioned but one of its slices has no index entry");
  }
  return &*it;
}

Status BundleReader::CheckAvailable(const BundleEntry& e) const {
  if (!e.has_slices) return CheckedShard(e).status();
  for (const TensorSliceSpec& spec : e.slices) {
    TROUPE_ASSIGN_OR_RETURN(const BundleEntry* slice, SliceEntry(e, spec));
    TROUPE_RETURN_IF_ERROR(CheckedShard(*slice).status());
  }
  return Status::OK();
}

Status BundleReader::ReadChecked(const BundleEntry& e, void* dst) const {
  TROUPE_ASSIGN_OR_RETURN(const RandomAccessFile* file, CheckedShard(e));
  char* p = static_cast<char*>(dst);
  const size_t n = static_cast<size_t>(e.size);
  uint32_t crc = 0;
  Status read_status;
  if (n < kPipelineMin) {
    for (size_t done = 0; done < n && read_status.ok();) {
      size_t len = std::min(kChunk, n - done);
      read_status = file->Read(static_cast<uint64_t>(e.offset) + done, len, p + done);
      crc = crc32c::Extend(crc, p + done, len);
      done += len;
    }
  } else {
    // Large tensors: a second thread checksums each piece as soon as it has landed, while
    // this one reads the next, so the crc costs no extra time when a core is free.
    std::atomic<size_t> landed{0};
    std::thread checker([&] {
      size_t pos = 0;
      while (pos < n) {
        size_t upto = landed.load(std::memory_order_acquire);
        if (upto == pos) {
          landed.wait(pos, std::memory_order_acquire);
          continue;
        }
        crc = crc32c::Extend(crc, p + pos, upto - pos);
        pos = upto;
      }
    });
    for (size_t done = 0; done < n;) {
      size_t len = std::min(kChunk, n - done);
      read_status = file->Read(static_cast<uint64_t>(e.offset) + done, len, p + done);
      // On a read error the checker still runs to the end (over garbage) so it can be joined.
      done += len;
      landed.store(done, std::memory_order_release);
      landed.notify_one();
      if (!read_status.ok()) {
        landed.store(n, std::memory_order_release);
        landed.notify_one();
        break;
      }
    }
    checker.join();
  }
  if (!read_status.ok()) return read_status.WithContext("reading tensor '" + e.key + "'");
  if (crc != crc32c::Unmask(e.masked_crc32c)) {
    return DataLossError(Describe(e) + ": crc32c mismatch (stored " +
                         Hex(crc32c::Unmask(e.masked_crc32c)) + ", computed " + Hex(crc) +
                         "): the data file is corrupt");
  }
  return Status::OK();
}

Status BundleReader::ReadString(const BundleEntry& e, std::string* out) const {
  TROUPE_ASSIGN_OR_RETURN(const RandomAccessFile* file, CheckedShard(e));
  std::string raw(static_cast<size_t>(e.size), '\0');
  TROUPE_RETURN_IF_ERROR(file->Read(static_cast<uint64_t>(e.offset), raw.size(), raw.data()));
  return DecodeStringTensor(raw, e.num_elements(), e.masked_crc32c, Describe(e), out);
}

Result<Tensor> BundleReader::Read(std::string_view key) const {
  TROUPE_ASSIGN_OR_RETURN(const BundleEntry* e, Lookup(key));
  if (e->dtype == DType::kInvalid) {
    return UnimplementedError("tensor '" + e->key + "' in " + prefix_ + " has dtype " +
                              DataTypeNumberName(e->dtype_number) +
                              ", which Troupe tensors do not support");
  }
  // Range first, so a damaged entry cannot make us allocate more than the file holds.
  if (!e->has_slices) TROUPE_RETURN_IF_ERROR(CheckedShard(*e).status());
  TROUPE_ASSIGN_OR_RETURN(Tensor t, Tensor::Allocate(e->dtype, e->shape));
  TROUPE_RETURN_IF_ERROR(ReadInto(key, t));
  return t;
}

Status BundleReader::ReadInto(std::string_view key, const Tensor& dst) const {
  TROUPE_ASSIGN_OR_RETURN(const BundleEntry* e, Lookup(key));
  if (!dst.initialized() || dst.dtype() != e->dtype || dst.shape() != e->shape) {
    return InvalidArgumentError(
        "cannot restore tensor '" + e->key + "' (" + DataTypeNumberName(e->dtype_number) +
        e->shape.ToString() + " in " + prefix_ + ") into " +
        (dst.initialized() ? std::string(DTypeName(dst.dtype())) + dst.shape().ToString()
                           : std::string("an uninitialized tensor")));
  }
  if (!dst.device().is_cpu()) {
    return InvalidArgumentError("ReadInto needs a CPU tensor for '" + e->key + "'");
  }
  if (e->has_slices) return ReadSlices(*e, dst);
  if (e->dtype == DType::kString) {
    return ReadString(*e, dst.data<std::string>());
  }
  return ReadChecked(*e, dst.raw_data());
}

Status BundleReader::ReadSlices(const BundleEntry& e, const Tensor& dst) const {
  const size_t elem = DTypeSize(e.dtype);
  if (elem == 0) {
    return UnimplementedError("tensor '" + e.key + "' in " + prefix_ + " is partitioned " +
                              DataTypeNumberName(e.dtype_number) +
                              "; only fixed-size dtypes can be assembled from slices");
  }
  const int rank = e.shape.rank();
  std::vector<int64_t> strides(static_cast<size_t>(rank), 1);
  for (int d = rank - 2; d >= 0; --d) strides[d] = strides[d + 1] * e.shape.dim(d + 1);
  int64_t covered = 0;
  for (const TensorSliceSpec& spec : e.slices) {
    TROUPE_ASSIGN_OR_RETURN(const BundleEntry* slice, SliceEntry(e, spec));
    std::vector<int64_t> start(static_cast<size_t>(rank)), len(static_cast<size_t>(rank));
    for (int d = 0; d < rank; ++d) {
      start[d] = spec[d].first;
      len[d] = spec[d].second < 0 ? e.shape.dim(d) - start[d] : spec[d].second;
    }
    if (slice->dtype_number != e.dtype_number || slice->shape != TensorShape(len)) {
      return DataLossError("checkpoint " + prefix_ + ": a slice of tensor '" + e.key + "' is " +
                           DataTypeNumberName(slice->dtype_number) + slice->shape.ToString() +
                           ", expected " + DataTypeNumberName(e.dtype_number) +
                           TensorShape(len).ToString());
    }
    std::string part(static_cast<size_t>(slice->size), '\0');
    TROUPE_RETURN_IF_ERROR(ReadChecked(*slice, part.data()));
    covered += slice->num_elements();
    if (slice->num_elements() == 0) continue;
    // Copy rows of the innermost dimension into place.
    const int64_t row = rank == 0 ? 1 : len[rank - 1];
    const int64_t rows = slice->num_elements() / row;
    std::vector<int64_t> idx(static_cast<size_t>(rank), 0);
    char* out = static_cast<char*>(dst.raw_data());
    for (int64_t r = 0; r < rows; ++r) {
      int64_t offset = 0;
      for (int d = 0; d < rank; ++d) offset += (start[d] + idx[d]) * strides[d];
      std::memcpy(out + offset * elem, part.data() + r * row * elem, row * elem);
      for (int d = rank - 2; d >= 0; --d) {
        if (++idx[d] < len[d]) break;
        idx[d] = 0;
      }
    }
  }
  if (covered != e.num_elements()) {
    return DataLossError("checkpoint " + prefix_ + ": the slices of tensor '" + e.key + "' cover " +
                         std::to_string(covered) + " of its " + std::to_string(e.num_elements()) +
                         " elements");
  }
  return Status::OK();
}

Result<std::string> BundleReader::ReadRaw(std::string_view key) const {
  TROUPE_ASSIGN_OR_RETURN(const BundleEntry* e, Lookup(key));
  TROUPE_ASSIGN_OR_RETURN(const RandomAccessFile* file, CheckedShard(*e));
  std::string raw(static_cast<size_t>(e->size), '\0');
  if (e->dtype_number == static_cast<int>(DType::kString)) {
    TROUPE_RETURN_IF_ERROR(file->Read(static_cast<uint64_t>(e->offset), raw.size(), raw.data()));
    std::vector<std::string> strings(static_cast<size_t>(e->num_elements()));
    TROUPE_RETURN_IF_ERROR(
        DecodeStringTensor(raw, e->num_elements(), e->masked_crc32c, Describe(*e), strings.data()));
    return raw;
  }
  if (e->dtype_number == kVariantDType) {
    TROUPE_RETURN_IF_ERROR(file->Read(static_cast<uint64_t>(e->offset), raw.size(), raw.data()));
    TROUPE_RETURN_IF_ERROR(
        VerifyVariantTensor(raw, e->num_elements(), e->masked_crc32c, Describe(*e)));
    return raw;
  }
  TROUPE_RETURN_IF_ERROR(ReadChecked(*e, raw.data()));
  return raw;
}

Status BundleReader::VerifyAll() const {
  for (const BundleEntry& e : entries_) {
    if (e.has_slices) {
      TROUPE_ASSIGN_OR_RETURN(Tensor t, Read(e.key));
      continue;
    }
    if (e.dtype == DType::kString || e.dtype_number == kVariantDType) {
      TROUPE_RETURN_IF_ERROR(ReadRaw(e.key).status());
      continue;
    }
    // Verified in bounded pieces so huge tensors need no full-size buffer.
    TROUPE_ASSIGN_OR_RETURN(const RandomAccessFile* file, CheckedShard(e));
    std::vector<char> buf(std::min<size_t>(kChunk, static_cast<size_t>(e.size)));
    uint32_t crc = 0;
    for (uint64_t done = 0; done < static_cast<uint64_t>(e.size);) {
      size_t len = static_cast<size_t>(std::min<uint64_t>(kChunk, e.size - done));
      TROUPE_RETURN_IF_ERROR(file->Read(e.offset + done, len, buf.data()));
      crc = crc32c::Extend(crc, buf.data(), len);
      done += len;
    }
    if (crc != crc32c::Unmask(e.masked_crc32c)) {
      return DataLossError(Describe(e) + ": crc32c mismatch (stored " +
                           Hex(crc32c::Unmask(e.masked_crc32c)) + ", computed " + Hex(crc) +
                           "): the data file is corrupt");
    }
  }
  return Status::OK();
}

}  // namespace troupe::ckpt
