// The sorted string table used for a bundle's `.index` file: LevelDB's table format (data
// blocks with prefix-compressed keys and restart points, an empty metaindex block, an index
// block and a 48-byte footer, each block followed by a type byte and a masked crc32c), which is
// what TensorFlow's tensorflow::table writes. Both directions use Debian's libleveldb table code;
// snappy-compressed blocks (type 1) are read as well.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/result.h"

namespace troupe::ckpt {

struct TableOptions {
  // TF's defaults for bundle indexes: 256 KiB blocks, a restart every 16 keys, no compression.
  size_t block_size = 256 * 1024;
  int block_restart_interval = 16;
  bool snappy = false;
};

// Builds a table in memory. Keys must be added in strictly increasing byte order.
class TableWriter {
 public:
  explicit TableWriter(TableOptions options = {});
  ~TableWriter();
  TableWriter(const TableWriter&) = delete;
  TableWriter& operator=(const TableWriter&) = delete;

  Status Add(std::string_view key, std::string_view value);
  // The finished table's bytes; the writer cannot be used afterwards.
  Result<std::string> Finish();

 private:
  struct Impl;
  Impl* impl_;
};

using TableEntry = std::pair<std::string, std::string>;

// Every entry of the table held in `contents`, in key order. Verifies the footer magic and every
// block checksum; corruption yields DataLoss naming `file_name`.
Result<std::vector<TableEntry>> ReadTable(std::string_view contents, const std::string& file_name);

}  // namespace troupe::ckpt
