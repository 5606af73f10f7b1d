// What a file or a value looks like from its first bytes, for error messages that name it: a
// JPEG passed where a TFRecord belongs, a PNG behind a feature declared as raw pixels. Only
// magic numbers are read (no decoding, no library): PNG, JPEG, GIF, WebP, BMP, gzip, zlib, zip
// (a .keras file is one), HDF5, NumPy .npy, IDX (Fashion-MNIST's files), a TFRecord header
// whose checksum holds, and printable text. Nothing here is a parser: a match says "looks
// like", never "is valid".
#pragma once

#include <string>
#include <string_view>

namespace troupe::input {

// Short kind names for `bytes`: "PNG image", "JPEG image", "GIF image", "WebP image",
// "BMP image", "gzip data", "zlib data", "zip archive", "HDF5 file", "NumPy .npy file",
// "IDX file", "text"; "" when nothing matches. Images are tested before the weaker signatures
// (zlib's two bytes, text).
std::string_view SniffKind(std::string_view bytes);

// True when the first 12 bytes of `bytes` are a TFRecord record header: a little-endian u64
// length followed by its masked crc32c.
bool LooksLikeTFRecord(std::string_view bytes);

// The first `n` bytes as lowercase hex pairs separated by spaces ("ff d8 ff e0").
std::string HexPrefix(std::string_view bytes, size_t n = 8);

// A phrase for a file's start, for "X is not a TFRecord file: <phrase>": e.g. "it starts like
// a JPEG image (ff d8 ff e0 00 10 4a 46)", "it is text (\"label,pixels\")", or "its first bytes
// are 01 02 03 …" when nothing matches. An empty file says so.
std::string DescribeFileStart(std::string_view head);

}  // namespace troupe::input
