// Engines: Random123 known answers (facts/rng.md §1, §2), TF's Skip quirk, and the vectorised
// bulk paths against the scalar definitions (including counter carries inside a vector).
#include <gtest/gtest.h>

#include <vector>

#include "kernels/random/philox_blocks.h"
#include "kernels/random/threefry.h"

namespace troupe::random {
namespace {

TEST(PhiloxTest, KnownAnswers) {
  using B = Philox4x32::Block;
  EXPECT_EQ(Philox4x32::Compute({0, 0, 0, 0}, {0, 0}),
            (B{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
  EXPECT_EQ(Philox4x32::Compute({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
                                {0xffffffff, 0xffffffff}),
            (B{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
  EXPECT_EQ(Philox4x32::Compute({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
                                {0xa4093822, 0x299f31d0}),
            (B{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

TEST(PhiloxTest, CallAdvancesCounterWithCarry) {
  Philox4x32 p({0xffffffff, 0xffffffff, 0xffffffff, 0}, {1, 2});
  p();
  EXPECT_EQ(p.counter(), (Philox4x32::Block{0, 0, 0, 1}));
}

TEST(PhiloxTest, SkipMatchesTensorFlowIncludingLostCarry) {
  Philox4x32 p({5, 0, 0, 0}, {0, 0});
  p.Skip(0x100000003ull);
  EXPECT_EQ(p.counter(), (Philox4x32::Block{8, 1, 0, 0}));
  Philox4x32 q({0xfffffff0, 0xfffffff0, 0xffffffff, 7}, {0, 0});
  q.Skip(0x20);  // low word carries into word 1
  EXPECT_EQ(q.counter(), (Philox4x32::Block{0x10, 0xfffffff1, 0xffffffff, 7}));
  Philox4x32 r({0, 0x10, 0xffffffff, 7}, {0, 0});
  r.Skip(0xfffffff000000000ull);  // word 1 overflows: carry ripples through word 2 into 3
  EXPECT_EQ(r.counter(), (Philox4x32::Block{0, 0, 0, 8}));
  // TF's quirk: count_hi == 0xffffffff plus a low carry wraps count_hi to 0, dropping a carry.
  Philox4x32 s({0xffffffff, 3, 0, 0}, {0, 0});
  s.Skip(0xffffffff00000001ull);
  EXPECT_EQ(s.counter(), (Philox4x32::Block{0, 3, 0, 0}));
}

TEST(PhiloxTest, SeedConstructorsFollowTensorFlow) {
  Philox4x32 a(0x1122334455667788ull);
  EXPECT_EQ(a.key(), (Philox4x32::Key{0x55667788, 0x11223344}));
  EXPECT_EQ(a.counter(), (Philox4x32::Block{0, 0, 0, 0}));
  Philox4x32 b(7, 0xaabbccdd00112233ull);
  EXPECT_EQ(b.key(), (Philox4x32::Key{7, 0}));
  EXPECT_EQ(b.counter(), (Philox4x32::Block{0, 0, 0x00112233, 0xaabbccdd}));
  const KeyCounter kc{0x0102030405060708ull, {0x1111111122222222ull, 0x3333333344444444ull}};
  const Philox4x32 c = PhiloxAt(kc);
  EXPECT_EQ(c.counter(), (Philox4x32::Block{0x22222222, 0x11111111, 0x44444444, 0x33333333}));
  EXPECT_EQ(KeyCounterOf(c), kc);
}

TEST(PhiloxTest, BulkBlocksEqualSequentialCalls) {
  for (uint32_t c0 : {0u, 5u, 0xfffffff9u, 0xfffffffcu, 0xffffff05u}) {
    for (uint32_t c1 : {0u, 0xffffffffu}) {
      const Philox4x32 base({c0, c1, 0xffffffff, 9}, {0x12345678, 0x9abcdef0});
      for (uint64_t first : {0ull, 3ull, 8ull}) {
        const int64_t n = 301;  // crosses a low-word wrap in the 16- and 8-wide paths
        std::vector<uint32_t> bulk(4 * n);
        PhiloxBlocks(base, first, n, bulk.data());
        Philox4x32 seq = base;
        for (uint64_t i = 0; i < first; ++i) seq();
        for (int64_t i = 0; i < n; ++i) {
          const auto b = seq();
          for (int j = 0; j < 4; ++j) {
            ASSERT_EQ(bulk[4 * i + j], b[j]) << "c0=" << c0 << " c1=" << c1 << " block " << i;
          }
        }
      }
    }
  }
}

TEST(ThreeFryTest, KnownAnswers) {
  using B = ThreeFry2x32::Block;
  EXPECT_EQ(ThreeFry2x32::Compute({0, 0}, 0, 0), (B{0x6b200159, 0x99ba4efe}));
  EXPECT_EQ(ThreeFry2x32::Compute({0xffffffff, 0xffffffff}, 0xffffffff, 0xffffffff),
            (B{0x1cb996fc, 0xbb002be7}));
  EXPECT_EQ(ThreeFry2x32::Compute({0x243f6a88, 0x85a308d3}, 0x13198a2e, 0x03707344),
            (B{0xc4923a9c, 0x483df7a0}));
  // XLA's view: u64 input and key split (lo, hi).
  EXPECT_EQ(ThreeFry2x32::Compute64(0x85a308d3243f6a88ull, 0x0370734413198a2eull),
            (B{0xc4923a9c, 0x483df7a0}));
}

TEST(ThreeFryTest, BulkWordsEqualScalar) {
  for (uint64_t start : {0ull, 0xfffffffaull, 0x1fffffff0ull, 0xfffffffffffffffcull}) {
    const int64_t n = 29;
    std::vector<uint32_t> a(n), b(n);
    ThreeFryWords(0xdeadbeefcafef00dull, start, n, a.data(), b.data());
    for (int64_t i = 0; i < n; ++i) {
      const auto w =
          ThreeFry2x32::Compute64(start + static_cast<uint64_t>(i), 0xdeadbeefcafef00dull);
      ASSERT_EQ(a[i], w[0]) << start << "+" << i;
      ASSERT_EQ(b[i], w[1]) << start << "+" << i;
    }
  }
}

}  // namespace
}  // namespace troupe::random
