#include "input/file_sniff.h"

#include <cstdint>

#include "core/crc32c.h"

namespace troupe::input {
namespace {

bool StartsWith(std::string_view bytes, std::string_view magic) {
  return bytes.substr(0, magic.size()) == magic;
}

uint8_t At(std::string_view bytes, size_t i) { return static_cast<uint8_t>(bytes[i]); }

// Printable ASCII, whitespace and UTF-8 continuation/lead bytes; no NUL or other controls.
bool IsText(std::string_view bytes) {
  if (bytes.empty()) return false;
  for (char ch : bytes) {
    const uint8_t c = static_cast<uint8_t>(ch);
    if (c == '\n' || c == '\r' || c == '\t') continue;
    if (c < 0x20 || c == 0x7f) return false;
  }
  return true;
}

// zlib's 2-byte header: CM 8, a window of at most 32 KiB, and the FCHECK multiple of 31.
bool IsZlib(std::string_view bytes) {
  if (bytes.size() < 2) return false;
  const uint8_t cmf = At(bytes, 0), flg = At(bytes, 1);
  return (cmf & 0x0f) == 8 && (cmf >> 4) <= 7 && ((cmf << 8) | flg) % 31 == 0;
}

// IDX: two zero bytes, a type code (0x08 uint8 ... 0x0e float64) and a rank of 1 to 4.
bool IsIdx(std::string_view bytes) {
  if (bytes.size() < 4 || At(bytes, 0) != 0 || At(bytes, 1) != 0) return false;
  const uint8_t type = At(bytes, 2), rank = At(bytes, 3);
  return type >= 0x08 && type <= 0x0e && type != 0x0a && type != 0x0f && rank >= 1 && rank <= 4;
}

}  // namespace

std::string_view SniffKind(std::string_view b) {
  if (StartsWith(b, "\x89PNG\r\n\x1a\n")) return "PNG image";
  if (b.size() >= 3 && At(b, 0) == 0xff && At(b, 1) == 0xd8 && At(b, 2) == 0xff) {
    return "JPEG image";
  }
  if (StartsWith(b, "GIF87a") || StartsWith(b, "GIF89a")) return "GIF image";
  if (StartsWith(b, "RIFF") && b.size() >= 12 && b.substr(8, 4) == "WEBP") return "WebP image";
  if (StartsWith(b, "BM") && b.size() >= 14 && At(b, 6) == 0 && At(b, 7) == 0 && At(b, 8) == 0 &&
      At(b, 9) == 0) {
    return "BMP image";
  }
  if (b.size() >= 2 && At(b, 0) == 0x1f && At(b, 1) == 0x8b) return "gzip data";
  if (StartsWith(b, std::string_view("PK\x03\x04", 4))) return "zip archive";
  if (StartsWith(b, "\x89HDF\r\n\x1a\n")) return "HDF5 file";
  if (StartsWith(b, "\x93NUMPY")) return "NumPy .npy file";
  if (IsIdx(b)) return "IDX file";
  if (IsZlib(b)) return "zlib data";
  if (IsText(b.substr(0, 64))) return "text";
  return "";
}

bool LooksLikeTFRecord(std::string_view b) {
  if (b.size() < 12) return false;
  uint32_t stored = 0;
  for (int i = 3; i >= 0; --i) stored = (stored << 8) | At(b, 8 + static_cast<size_t>(i));
  return crc32c::Unmask(stored) == crc32c::Value(b.data(), 8);
}

std::string HexPrefix(std::string_view bytes, size_t n) {
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < bytes.size() && i < n; ++i) {
    if (i) out += ' ';
    out += kHex[At(bytes, i) >> 4];
    out += kHex[At(bytes, i) & 15];
  }
  if (bytes.size() > n) out += " ...";
  return out;
}

std::string DescribeFileStart(std::string_view head) {
  if (head.empty()) return "it is empty";
  const std::string_view kind = SniffKind(head);
  if (kind == "text") {
    std::string sample;
    for (char c : head.substr(0, 40)) sample += (c == '\n' || c == '\r' || c == '\t') ? ' ' : c;
    return "it is text (\"" + sample + (head.size() > 40 ? "...\")" : "\")");
  }
  const std::string hex = "(" + HexPrefix(head) + ")";
  if (kind.empty()) return "its first bytes are " + hex.substr(1, hex.size() - 2);
  const bool mass = kind.ends_with("data");             // "gzip data", "zlib data"
  const bool vowel = kind[0] == 'I' || kind[0] == 'H';  // "an IDX file", "an HDF5 file"
  return "it starts like " +
         std::string(mass    ? ""
                     : vowel ? "an "
                             : "a ") +
         std::string(kind) + " " + hex;
}

}  // namespace troupe::input
