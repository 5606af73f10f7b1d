#include "checkpoint/table.h"

#include <leveldb/comparator.h>
#include <leveldb/env.h>
#include <leveldb/iterator.h>
#include <leveldb/options.h>
#include <leveldb/table.h>
#include <leveldb/table_builder.h>

#include <snappy.h>

#include <cstring>
#include <memory>

#include "core/crc32c.h"
#include "core/proto_wire.h"

namespace troupe::ckpt {
namespace {

class StringSink : public leveldb::WritableFile {
 public:
  explicit StringSink(std::string* out) : out_(out) {}
  leveldb::Status Append(const leveldb::Slice& data) override {
    out_->append(data.data(), data.size());
    return leveldb::Status::OK();
  }
  leveldb::Status Close() override { return leveldb::Status::OK(); }
  leveldb::Status Flush() override { return leveldb::Status::OK(); }
  leveldb::Status Sync() override { return leveldb::Status::OK(); }

 private:
  std::string* out_;
};

class StringSource : public leveldb::RandomAccessFile {
 public:
  explicit StringSource(std::string_view data) : data_(data) {}
  leveldb::Status Read(uint64_t offset, size_t n, leveldb::Slice* result,
                       char* scratch) const override {
    if (offset > data_.size()) {
      *result = leveldb::Slice();
      return leveldb::Status::IOError("read past the end of the file");
    }
    size_t len = std::min<uint64_t>(n, data_.size() - offset);
    // The data stays alive and unchanged while the table is open, so no copy into scratch.
    *result = leveldb::Slice(data_.data() + offset, len);
    return leveldb::Status::OK();
  }

 private:
  std::string_view data_;
};

// --- Layout checks made before LevelDB sees the bytes. -------------------------------------
// LevelDB allocates a block's size before it reads or checksums it, and it never reads the
// metaindex block or the footer padding. Checking the footer, every block handle and those
// otherwise unread bytes here means any corrupt byte yields DataLoss and a corrupt handle
// cannot make LevelDB allocate an absurd buffer.
constexpr size_t kFooterSize = 48;
constexpr size_t kTrailerSize = 5;
constexpr uint64_t kTableMagic = 0xdb4775248b80fb57ull;

struct Handle {
  uint64_t offset = 0;
  uint64_t size = 0;
};

Status Corrupt(const std::string& file, const std::string& what) {
  return DataLossError("checkpoint index " + file + " is corrupt: " + what);
}

// Checks a block's range and checksum; returns its (uncompressed) contents.
Status CheckBlock(std::string_view contents, const Handle& h, const std::string& file,
                  const char* what, std::string* block) {
  if (h.offset > contents.size() || h.size > contents.size() - h.offset ||
      kTrailerSize > contents.size() - h.offset - h.size) {
    return Corrupt(file, std::string(what) + " block [" + std::to_string(h.offset) + ", +" +
                             std::to_string(h.size) + ") lies outside the file of " +
                             std::to_string(contents.size()) + " bytes");
  }
  const char* data = contents.data() + h.offset;
  uint32_t stored = crc32c::Unmask(DecodeFixed32(data + h.size + 1));
  if (crc32c::Value(data, h.size + 1) != stored) {
    return Corrupt(file, std::string(what) + " block at offset " + std::to_string(h.offset) +
                             " fails its crc32c check");
  }
  switch (data[h.size]) {
    case 0:
      block->assign(data, h.size);
      return Status::OK();
    case 1: {
      size_t length = 0;
      if (!snappy::GetUncompressedLength(data, h.size, &length) || length > 64 * (h.size + 64) ||
          !snappy::Uncompress(data, h.size, block)) {
        return Corrupt(file, std::string(what) + " block at offset " + std::to_string(h.offset) +
                                 " is not valid snappy data");
      }
      return Status::OK();
    }
    default:
      return Corrupt(file, std::string(what) + " block has unknown compression type " +
                               std::to_string(static_cast<uint8_t>(data[h.size])));
  }
}

// Walks the index block's entries and checks that the data blocks they name are in range.
Status CheckIndexBlock(std::string_view contents, std::string_view block, uint64_t data_end,
                       const std::string& file) {
  if (block.size() < 4) return Corrupt(file, "index block is too short");
  uint32_t num_restarts = DecodeFixed32(block.data() + block.size() - 4);
  if (num_restarts > (block.size() - 4) / 4) {
    return Corrupt(file, "index block has an impossible restart count");
  }
  std::string_view entries = block.substr(0, block.size() - 4 - 4ull * num_restarts);
  std::string key;
  uint64_t expected_offset = 0;
  while (!entries.empty()) {
    uint32_t shared, non_shared, value_len;
    if (!GetVarint32(&entries, &shared) || !GetVarint32(&entries, &non_shared) ||
        !GetVarint32(&entries, &value_len) || shared > key.size() || non_shared > entries.size() ||
        value_len > entries.size() - non_shared) {
      return Corrupt(file, "index block entry is malformed");
    }
    key.resize(shared);
    key.append(entries.data(), non_shared);
    std::string_view value = entries.substr(non_shared, value_len);
    entries.remove_prefix(non_shared + value_len);
    Handle h;
    if (!GetVarint64(&value, &h.offset) || !GetVarint64(&value, &h.size)) {
      return Corrupt(file, "index block holds a malformed block handle");
    }
    // Data blocks tile the start of the file; a gap or overlap means a damaged handle.
    if (h.offset != expected_offset || h.size > data_end || kTrailerSize > data_end - h.size ||
        h.offset > data_end - h.size - kTrailerSize) {
      return Corrupt(file, "index names a data block at [" + std::to_string(h.offset) + ", +" +
                               std::to_string(h.size) + ") that does not fit the file layout");
    }
    expected_offset = h.offset + h.size + kTrailerSize;
  }
  if (expected_offset != data_end) {
    return Corrupt(file, "data blocks end at " + std::to_string(expected_offset) +
                             " but the metaindex block starts at " + std::to_string(data_end));
  }
  return Status::OK();
}

Status CheckTableLayout(std::string_view contents, const std::string& file) {
  if (contents.size() < kFooterSize) {
    return Corrupt(file, "the file has " + std::to_string(contents.size()) +
                             " bytes, fewer than the 48-byte table footer (truncated?)");
  }
  const char* footer = contents.data() + contents.size() - kFooterSize;
  uint64_t magic = static_cast<uint64_t>(DecodeFixed32(footer + 40)) |
                   static_cast<uint64_t>(DecodeFixed32(footer + 44)) << 32;
  if (magic != kTableMagic) {
    return Corrupt(file,
                   "bad table magic number (not a TensorFlow checkpoint index, or "
                   "truncated)");
  }
  std::string_view handles(footer, 40);
  Handle meta, index;
  if (!GetVarint64(&handles, &meta.offset) || !GetVarint64(&handles, &meta.size) ||
      !GetVarint64(&handles, &index.offset) || !GetVarint64(&handles, &index.size)) {
    return Corrupt(file, "footer block handles are malformed");
  }
  // The footer must be exactly what a writer produces: canonical varints, then zeros. (An
  // overlong varint or stray padding byte would decode fine yet be a flipped byte.)
  std::string canonical;
  for (uint64_t v : {meta.offset, meta.size, index.offset, index.size}) {
    while (v >= 0x80) {
      canonical.push_back(static_cast<char>(v | 0x80));
      v >>= 7;
    }
    canonical.push_back(static_cast<char>(v));
  }
  canonical.resize(40, '\0');
  if (std::memcmp(canonical.data(), footer, 40) != 0) {
    return Corrupt(file, "footer block handles are not canonically encoded");
  }
  uint64_t footer_start = contents.size() - kFooterSize;
  std::string block;
  TROUPE_RETURN_IF_ERROR(CheckBlock(contents, meta, file, "metaindex", &block));
  TROUPE_RETURN_IF_ERROR(CheckBlock(contents, index, file, "index", &block));
  if (meta.offset + meta.size + kTrailerSize != index.offset ||
      index.offset + index.size + kTrailerSize != footer_start) {
    return Corrupt(file, "metaindex and index blocks are not where the footer says");
  }
  return CheckIndexBlock(contents, block, meta.offset, file);
}

}  // namespace

struct TableWriter::Impl {
  std::string out;
  StringSink sink{&out};
  leveldb::Options options;
  std::unique_ptr<leveldb::TableBuilder> builder;
  std::string last_key;
  bool finished = false;
};

TableWriter::TableWriter(TableOptions options) : impl_(new Impl) {
  impl_->options.block_size = options.block_size;
  impl_->options.block_restart_interval = options.block_restart_interval;
  impl_->options.compression =
      options.snappy ? leveldb::kSnappyCompression : leveldb::kNoCompression;
  impl_->options.comparator = leveldb::BytewiseComparator();
  impl_->builder = std::make_unique<leveldb::TableBuilder>(impl_->options, &impl_->sink);
}

TableWriter::~TableWriter() {
  if (!impl_->finished) impl_->builder->Abandon();
  delete impl_;
}

Status TableWriter::Add(std::string_view key, std::string_view value) {
  if (impl_->finished) return FailedPreconditionError("TableWriter::Add after Finish");
  // LevelDB only asserts the order in debug builds; an unsorted table would be unreadable.
  if (impl_->builder->NumEntries() > 0 && !(impl_->last_key < key)) {
    return InvalidArgumentError("table keys must be strictly increasing: '" + std::string(key) +
                                "' after '" + impl_->last_key + "'");
  }
  impl_->builder->Add(leveldb::Slice(key.data(), key.size()),
                      leveldb::Slice(value.data(), value.size()));
  impl_->last_key.assign(key);
  if (!impl_->builder->status().ok()) {
    return InternalError("building table: " + impl_->builder->status().ToString());
  }
  return Status::OK();
}

Result<std::string> TableWriter::Finish() {
  if (impl_->finished) return FailedPreconditionError("TableWriter::Finish called twice");
  impl_->finished = true;
  leveldb::Status s = impl_->builder->Finish();
  if (!s.ok()) return InternalError("finishing table: " + s.ToString());
  return std::move(impl_->out);
}

Result<std::vector<TableEntry>> ReadTable(std::string_view contents, const std::string& file_name) {
  TROUPE_RETURN_IF_ERROR(CheckTableLayout(contents, file_name));
  StringSource source(contents);
  leveldb::Options options;
  options.comparator = leveldb::BytewiseComparator();
  options.paranoid_checks = true;
  leveldb::Table* raw_table = nullptr;
  leveldb::Status s = leveldb::Table::Open(options, &source, contents.size(), &raw_table);
  if (!s.ok()) {
    return DataLossError("checkpoint index " + file_name +
                         " is not a valid table (corrupt or truncated): " + s.ToString());
  }
  std::unique_ptr<leveldb::Table> table(raw_table);
  leveldb::ReadOptions read_options;
  read_options.verify_checksums = true;
  read_options.fill_cache = false;
  std::unique_ptr<leveldb::Iterator> it(table->NewIterator(read_options));
  std::vector<TableEntry> entries;
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    leveldb::Slice k = it->key();
    leveldb::Slice v = it->value();
    if (!entries.empty() &&
        !(std::string_view(entries.back().first) < std::string_view(k.data(), k.size()))) {
      return DataLossError("checkpoint index " + file_name + " is corrupt: key '" + k.ToString() +
                           "' is out of order after '" + entries.back().first + "'");
    }
    entries.emplace_back(k.ToString(), v.ToString());
  }
  if (!it->status().ok()) {
    return DataLossError("checkpoint index " + file_name +
                         " is corrupt: " + it->status().ToString());
  }
  return entries;
}

}  // namespace troupe::ckpt
