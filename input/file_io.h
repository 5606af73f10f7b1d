// Byte streams for the input pipeline: files read and written through the Env (core/env.h:
// buffered, large sequential reads), zlib/gzip inflating and deflating wrappers around them.
// Offsets are positions in the (uncompressed) stream, so record readers can report "corrupted
// record at <offset>" the way TF does.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/env.h"
#include "core/result.h"
#include "core/status.h"

namespace troupe::input {

enum class Compression { kNone, kZlib, kGzip };
// "" / "ZLIB" / "GZIP" as tf.data spells them.
Result<Compression> CompressionFromName(std::string_view name);
std::string_view CompressionName(Compression c);

// A stream of (uncompressed) bytes: an Env file, or a zlib/gzip stream over one, which has the
// same interface — Read, Tell and Seek count uncompressed bytes, and moving back in a
// compressed stream re-reads it from the start.
using InputStream = SequentialFile;

// Opens `path` for sequential reading, inflating when `compression` says so.
Result<std::unique_ptr<InputStream>> OpenInputStream(const std::string& path,
                                                     Compression compression,
                                                     size_t buffer_bytes = kDefaultReadBufferBytes);
// Like OpenInputStream, but sniffs the gzip magic (1f 8b) to decide: for .gz files or raw ones.
Result<std::unique_ptr<InputStream>> OpenMaybeGzipped(
    const std::string& path, size_t buffer_bytes = kDefaultReadBufferBytes);

// Bytes being written: an Env file, or a zlib/gzip stream into one, which has the same
// interface — Flush also writes a zlib sync point, Close the zlib trailer, size() counts
// uncompressed bytes.
using OutputStream = WritableFile;

struct ZlibOptions {
  int level = -1;     // Z_DEFAULT_COMPRESSION, as TF
  int mem_level = 9;  // TF's default
  size_t buffer_bytes = 256 << 10;
};

Result<std::unique_ptr<OutputStream>> OpenOutputStream(const std::string& path,
                                                       Compression compression,
                                                       const ZlibOptions& zlib = {});

// Files matching the glob `pattern`, sorted (tf.data.Dataset.list_files(shuffle=False)).
// InvalidArgument for an empty pattern and NotFound for one that matches nothing, both naming
// the config `key` it came from.
Result<std::vector<std::string>> MatchFiles(const std::string& pattern, const std::string& key);

}  // namespace troupe::input
