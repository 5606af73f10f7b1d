#include "core/cpu_allocator.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

namespace troupe {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

bool Aligned(void* p, size_t a) { return reinterpret_cast<uintptr_t>(p) % a == 0; }

TEST(CpuBlockAllocatorTest, SmallBlocksAreAlignedAndNotCounted) {
  CpuBlockAllocator a;
  void* p = a.Allocate(100);
  void* z = a.Allocate(0);
  ASSERT_NE(p, nullptr);
  ASSERT_NE(z, nullptr);
  EXPECT_TRUE(Aligned(p, kTensorAlignment));
  std::memset(p, 1, 100);
  a.Deallocate(p, 100);
  a.Deallocate(z, 0);
  EXPECT_EQ(a.stats().maps, 0);
  EXPECT_EQ(a.stats().live_bytes, 0u);
}

TEST(CpuBlockAllocatorTest, LargeBlocksStartOnHugePagesAndAreReusedBySize) {
  CpuBlockAllocator a;
  const size_t bytes = 5 * kMiB + 12;
  void* p = a.Allocate(bytes);
  ASSERT_NE(p, nullptr);
  EXPECT_TRUE(Aligned(p, CpuBlockAllocator::kHugePage));
  std::memset(p, 7, bytes);  // the whole block is writable
  a.Deallocate(p, bytes);
  EXPECT_EQ(a.stats().live_bytes, 0u);
  EXPECT_GT(a.stats().kept_bytes, bytes);
  // A request of about the same size (same 64 KiB granules) gets the kept block back.
  void* q = a.Allocate(bytes - 8);
  EXPECT_EQ(q, p);
  EXPECT_EQ(a.stats().maps, 1);
  EXPECT_EQ(a.stats().reuses, 1);
  EXPECT_EQ(a.stats().kept_bytes, 0u);
  a.Deallocate(q, bytes - 8);
}

TEST(CpuBlockAllocatorTest, AKeptBlockMuchLargerThanTheRequestIsNotUsed) {
  CpuBlockAllocator a;
  void* big = a.Allocate(16 * kMiB);
  a.Deallocate(big, 16 * kMiB);
  void* small = a.Allocate(4 * kMiB);
  EXPECT_EQ(a.stats().reuses, 0);
  EXPECT_EQ(a.stats().maps, 2);
  a.Deallocate(small, 4 * kMiB);
}

TEST(CpuBlockAllocatorTest, ASlightlyLargerKeptBlockIsTrimmedToTheRequest) {
  CpuBlockAllocator a;
  void* p = a.Allocate(9 * kMiB);
  a.Deallocate(p, 9 * kMiB);
  void* q = a.Allocate(8 * kMiB + 1);  // within an eighth: reused, its tail unmapped
  EXPECT_EQ(q, p);
  std::memset(q, 3, 8 * kMiB + 1);
  EXPECT_EQ(a.stats().kept_bytes, 0u);
  a.Deallocate(q, 8 * kMiB + 1);
  // What is kept now is the trimmed size, which an exact request finds.
  void* r = a.Allocate(8 * kMiB + 1);
  EXPECT_EQ(r, p);
  EXPECT_EQ(a.stats().reuses, 2);
  a.Deallocate(r, 8 * kMiB + 1);
}

// Live + kept never exceeds the most live bytes there have been at once, so keeping blocks
// does not raise the peak memory over what the tensors themselves need.
TEST(CpuBlockAllocatorTest, KeptBlocksNeverRaiseMappedBytesAboveThePeakOfLiveBytes) {
  CpuBlockAllocator a;
  std::vector<void*> blocks;
  for (int i = 0; i < 4; ++i) blocks.push_back(a.Allocate(4 * kMiB));
  const size_t peak = a.stats().peak_live_bytes;
  EXPECT_EQ(peak, 16 * kMiB);
  for (void* b : blocks) a.Deallocate(b, 4 * kMiB);
  EXPECT_EQ(a.stats().kept_bytes, 16 * kMiB);
  // 12 MiB of another size: no kept block fits, and mapping it would hold 28 MiB, so kept
  // blocks go first.
  void* other = a.Allocate(12 * kMiB);
  CpuBlockAllocator::Stats s = a.stats();
  EXPECT_LE(s.live_bytes + s.kept_bytes, peak);
  EXPECT_EQ(s.live_bytes, 12 * kMiB);
  EXPECT_EQ(s.kept_bytes, 4 * kMiB);
  // Past the peak, everything kept is given back.
  void* more = a.Allocate(8 * kMiB);
  s = a.stats();
  EXPECT_EQ(s.kept_bytes, 0u);
  EXPECT_EQ(s.peak_live_bytes, 20 * kMiB);
  a.Deallocate(other, 12 * kMiB);
  a.Deallocate(more, 8 * kMiB);
}

}  // namespace
}  // namespace troupe
