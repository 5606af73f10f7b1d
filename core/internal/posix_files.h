// Internal to core/: the POSIX file objects core/env.cc's PosixEnv hands out. Each takes
// ownership of an open file descriptor `fd` of `path` (named in its errors).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "core/env.h"

namespace troupe::internal {

// Reads through one large buffer of `buffer_bytes`, refilled by one read() at a time.
std::unique_ptr<SequentialFile> NewPosixSequentialFile(int fd, std::string path,
                                                       size_t buffer_bytes);
// pread() at any offset of a file of `size` bytes.
std::unique_ptr<RandomAccessFile> NewPosixRandomAccessFile(std::string path, int fd, uint64_t size);
// Buffered writes; `direct`: `fd` was opened with O_DIRECT (staged through aligned buffers).
Result<std::unique_ptr<WritableFile>> NewPosixWritableFile(std::string path, int fd,
                                                           const WritableFileOptions& options,
                                                           bool direct);

}  // namespace troupe::internal
