// Base-128 varints as protocol buffers, LevelDB tables and TF's string tensors write them: seven
// bits per byte, least significant group first, high bit set on every byte but the last.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace troupe {

// Appends the varint encoding of `v` (1 to 10 bytes).
void PutVarint64(std::string* out, uint64_t v);

// Decodes a varint from the front of `*in` and drops the bytes it used. False when `*in` ends
// first or the encoding runs past 10 bytes (then `*in` and `*v` are unspecified).
bool GetVarint64(std::string_view* in, uint64_t* v);

}  // namespace troupe
