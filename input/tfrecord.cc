#include "input/tfrecord.h"

#include <cstring>

#include "core/crc32c.h"
#include "core/logging.h"
#include "core/proto_wire.h"
#include "input/file_sniff.h"

namespace troupe::input {
namespace {

// A length beyond this is treated as damage rather than an allocation request.
constexpr uint64_t kMaxRecordBytes = uint64_t{1} << 40;

}  // namespace

std::string TFRecordHeader(std::string_view data) {
  std::string h(kTFRecordHeaderBytes, '\0');
  EncodeFixed64(h.data(), data.size());
  EncodeFixed32(h.data() + 8, crc32c::Mask(crc32c::Value(h.data(), 8)));
  return h;
}

std::string TFRecordFooter(std::string_view data) {
  std::string f(kTFRecordFooterBytes, '\0');
  EncodeFixed32(f.data(), crc32c::Mask(crc32c::Value(data)));
  return f;
}

Result<std::unique_ptr<TFRecordReader>> TFRecordReader::Open(const std::string& path,
                                                             const TFRecordReaderOptions& options) {
  TROUPE_ASSIGN_OR_RETURN(auto stream,
                          OpenInputStream(path, options.compression, options.buffer_bytes));
  return std::unique_ptr<TFRecordReader>(new TFRecordReader(std::move(stream), options));
}

Status TFRecordReader::Fill(void* dst, size_t n, size_t* got) {
  TROUPE_ASSIGN_OR_RETURN(*got, stream_->Read(dst, n));
  return Status::OK();
}

Status TFRecordReader::ReadAt(std::string* record, bool* truncated) {
  *truncated = false;
  char header[kTFRecordHeaderBytes];
  size_t got = 0;
  TROUPE_RETURN_IF_ERROR(Fill(header, sizeof(header), &got));
  if (got == 0) return OutOfRangeError("end of file " + path());
  if (got < sizeof(header)) {
    *truncated = true;
    if (offset_ == 0) return NotATFRecord(std::string_view(header, got));
    return DataLossError("truncated record" + Where(offset_) +
                         ": the file ends inside the 12-byte record header");
  }
  const uint64_t length = DecodeFixed64(header);
  if (crc32c::Unmask(DecodeFixed32(header + 8)) != crc32c::Value(header, 8)) {
    if (offset_ == 0) return NotATFRecord(std::string_view(header, sizeof(header)));
    return DataLossError("corrupted record" + Where(offset_) +
                         ": the length field's checksum does not match");
  }
  if (length > kMaxRecordBytes) {
    return DataLossError("corrupted record" + Where(offset_) + ": implausible record length " +
                         std::to_string(length));
  }
  record->resize(static_cast<size_t>(length));
  TROUPE_RETURN_IF_ERROR(Fill(record->data(), record->size(), &got));
  char footer[kTFRecordFooterBytes];
  size_t got_footer = 0;
  if (got == record->size()) TROUPE_RETURN_IF_ERROR(Fill(footer, sizeof(footer), &got_footer));
  if (got < record->size() || got_footer < sizeof(footer)) {
    *truncated = true;
    return DataLossError("truncated record" + Where(offset_) + ": expected " +
                         std::to_string(length) +
                         " data bytes and a 4-byte checksum, the file ends first");
  }
  if (crc32c::Unmask(DecodeFixed32(footer)) != crc32c::Value(*record)) {
    return DataLossError("corrupted record" + Where(offset_) +
                         ": the data checksum does not match (" + std::to_string(length) +
                         " bytes)");
  }
  return Status::OK();
}

Status TFRecordReader::ReadRecord(std::string* record) {
  while (true) {
    const uint64_t start = offset_;
    bool truncated = false;
    Status s = ReadAt(record, &truncated);
    if (s.ok()) {
      offset_ = stream_->Tell();
      if (index_ >= 0) ++index_;
      return s;
    }
    if (s.code() != StatusCode::kDataLoss || !options_.skip_corrupt) {
      // Leave the position at the bad record so a retry reports the same offset.
      Status seek = stream_->Seek(start);
      (void)seek;
      return s;
    }
    ++skipped_;
    index_ = -1;  // records were skipped: not counted
    TROUPE_LOG(WARNING) << "skipping " << s.message();
    if (truncated) {
      offset_ = stream_->Tell();
      return OutOfRangeError("end of file " + path() + " (after a truncated record)");
    }
    TROUPE_RETURN_IF_ERROR(Resync(start));
  }
}

// Finds the next offset after `bad_offset` whose 12-byte header checks out; a data-checksum
// failure with a valid header simply skips that record.
Status TFRecordReader::Resync(uint64_t bad_offset) {
  // Re-read the header: when its checksum is fine only the data was damaged.
  TROUPE_RETURN_IF_ERROR(stream_->Seek(bad_offset));
  char header[kTFRecordHeaderBytes];
  size_t got = 0;
  TROUPE_RETURN_IF_ERROR(Fill(header, sizeof(header), &got));
  if (got == sizeof(header) &&
      crc32c::Unmask(DecodeFixed32(header + 8)) == crc32c::Value(header, 8)) {
    const uint64_t length = DecodeFixed64(header);
    offset_ = bad_offset + kTFRecordHeaderBytes + length + kTFRecordFooterBytes;
    return stream_->Seek(offset_);
  }
  // Damaged header: slide a window one byte at a time until a header validates.
  uint64_t pos = bad_offset + 1;
  TROUPE_RETURN_IF_ERROR(stream_->Seek(pos));
  std::string window(kTFRecordHeaderBytes, '\0');
  TROUPE_RETURN_IF_ERROR(Fill(window.data(), window.size(), &got));
  while (got == kTFRecordHeaderBytes) {
    if (crc32c::Unmask(DecodeFixed32(window.data() + 8)) == crc32c::Value(window.data(), 8) &&
        DecodeFixed64(window.data()) <= kMaxRecordBytes) {
      offset_ = pos;
      return stream_->Seek(pos);
    }
    char next;
    size_t n = 0;
    TROUPE_RETURN_IF_ERROR(Fill(&next, 1, &n));
    if (n == 0) break;
    window.erase(0, 1);
    window.push_back(next);
    ++pos;
  }
  offset_ = stream_->Tell();
  return Status::OK();  // next ReadAt sees the end of file (or a short tail)
}

Status TFRecordReader::SeekTo(uint64_t offset) {
  TROUPE_RETURN_IF_ERROR(stream_->Seek(offset));
  offset_ = offset;
  index_ = offset == 0 ? 0 : -1;  // recounted when an error needs it
  return Status::OK();
}

std::string TFRecordReader::Where(uint64_t offset) const {
  std::string where = " at " + std::to_string(offset) + " in " + path();
  int64_t index = index_;
  if (index < 0 && !options_.skip_corrupt) {
    // Count the records before `offset` with a reader of its own (only on this error path).
    TFRecordReaderOptions plain = options_;
    plain.skip_corrupt = false;
    Result<std::unique_ptr<TFRecordReader>> counter = Open(path(), plain);
    std::string record;
    int64_t n = 0;
    while (counter.ok() && (*counter)->offset() < offset && (*counter)->ReadRecord(&record).ok()) {
      ++n;
    }
    if (counter.ok() && (*counter)->offset() == offset) index = n;
  }
  if (index >= 0) where += " (record " + std::to_string(index) + " of the file)";
  return where;
}

Status TFRecordReader::NotATFRecord(std::string_view head) const {
  return DataLossError(path() + " is not a TFRecord file: " + DescribeFileStart(head) +
                       (options_.compression == Compression::kNone ? "" : " once inflated") +
                       ", where a TFRecord file starts with a 12-byte record header (a length "
                       "and its checksum) that checks out");
}

Result<std::unique_ptr<TFRecordWriter>> TFRecordWriter::Open(const std::string& path,
                                                             const TFRecordWriterOptions& options) {
  TROUPE_ASSIGN_OR_RETURN(auto out, OpenOutputStream(path, options.compression, options.zlib));
  return std::unique_ptr<TFRecordWriter>(new TFRecordWriter(std::move(out)));
}

TFRecordWriter::~TFRecordWriter() {
  if (!closed_) (void)Close();
}

Status TFRecordWriter::WriteRecord(std::string_view data) {
  if (closed_) return FailedPreconditionError("WriteRecord on a closed TFRecordWriter");
  TROUPE_RETURN_IF_ERROR(out_->Append(TFRecordHeader(data)));
  TROUPE_RETURN_IF_ERROR(out_->Append(data));
  return out_->Append(TFRecordFooter(data));
}

Status TFRecordWriter::Flush() { return out_->Flush(); }

Status TFRecordWriter::Close() {
  if (closed_) return Status::OK();
  closed_ = true;
  return out_->Close();
}

}  // namespace troupe::input
