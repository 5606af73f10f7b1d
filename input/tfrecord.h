// TFRecord files: each record is  u64le length | u32le masked crc32c(length bytes) | data |
// u32le masked crc32c(data). With ZLIB/GZIP compression the whole file is one deflate stream
// holding that framing. The reader checks both checksums; a damaged file gives DataLoss naming
// the file and the byte offset (in the uncompressed stream) of the bad record, and a clean end
// at a record boundary gives OutOfRange, as TF's RecordReader does. Optionally the reader skips
// damaged records (resynchronising on the next valid header) and counts them. Errors name the
// record's index in the file as well ("corrupted record at 53 in F (record 2 of the file)",
// counted again from the start after a SeekTo), and a first header that does not check out is
// "F is not a TFRecord file" saying what the file looks like (JPEG, PNG, gzip, text, ...).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "core/result.h"
#include "input/file_io.h"

namespace troupe::input {

inline constexpr size_t kTFRecordHeaderBytes = 12;  // length + its crc
inline constexpr size_t kTFRecordFooterBytes = 4;   // data crc

struct TFRecordReaderOptions {
  Compression compression = Compression::kNone;
  size_t buffer_bytes = kDefaultReadBufferBytes;
  // Skip records whose checksums fail (and a truncated tail) instead of failing; see
  // TFRecordReader::corrupt_records_skipped().
  bool skip_corrupt = false;
};

class TFRecordReader {
 public:
  static Result<std::unique_ptr<TFRecordReader>> Open(const std::string& path,
                                                      const TFRecordReaderOptions& options = {});

  // Reads the next record into `record`. OutOfRange at the end of the file.
  Status ReadRecord(std::string* record);
  // Offset of the next record in the uncompressed stream.
  uint64_t offset() const { return offset_; }
  // Continues reading at `offset` (a value offset() returned earlier).
  Status SeekTo(uint64_t offset);
  int64_t corrupt_records_skipped() const { return skipped_; }
  const std::string& path() const { return stream_->path(); }

 private:
  TFRecordReader(std::unique_ptr<InputStream> stream, TFRecordReaderOptions options)
      : stream_(std::move(stream)), options_(options) {}
  // One attempt at the record at offset_: OK, OutOfRange (clean end), DataLoss (bad record).
  Status ReadAt(std::string* record, bool* truncated);
  Status Resync(uint64_t bad_offset);
  Status Fill(void* dst, size_t n, size_t* got);
  // " at OFFSET in PATH (record N of the file)" for an error at `offset`.
  std::string Where(uint64_t offset) const;
  // DataLoss for a file whose first record header, `head`, does not check out.
  Status NotATFRecord(std::string_view head) const;

  std::unique_ptr<InputStream> stream_;
  TFRecordReaderOptions options_;
  uint64_t offset_ = 0;
  int64_t skipped_ = 0;
  int64_t index_ = 0;  // the index of the record at offset_ in the file; -1: not known
};

struct TFRecordWriterOptions {
  Compression compression = Compression::kNone;
  ZlibOptions zlib;
};

class TFRecordWriter {
 public:
  static Result<std::unique_ptr<TFRecordWriter>> Open(const std::string& path,
                                                      const TFRecordWriterOptions& options = {});
  ~TFRecordWriter();
  Status WriteRecord(std::string_view data);
  Status Flush();
  Status Close();

 private:
  explicit TFRecordWriter(std::unique_ptr<OutputStream> out) : out_(std::move(out)) {}
  std::unique_ptr<OutputStream> out_;
  bool closed_ = false;
};

// The 12-byte header and 4-byte footer for `data` (exposed for tests and fault injection).
std::string TFRecordHeader(std::string_view data);
std::string TFRecordFooter(std::string_view data);

}  // namespace troupe::input
