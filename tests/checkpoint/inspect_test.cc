#include "checkpoint/inspect.h"

#include <gtest/gtest.h>

#include <sstream>

#include "checkpoint/bundle_writer.h"
#include "tests/checkpoint/test_util.h"

namespace troupe::ckpt {
namespace {

using testing::Iota;
using testing::ScratchDir;

void Write(const std::string& prefix, float offset, bool extra) {
  auto w = BundleWriter::Create(prefix);
  ASSERT_TRUE(w.ok());
  Tensor t = Iota<float>({2, 3});
  t.data<float>()[4] += offset;
  ASSERT_TRUE((*w)->Add("layer/kernel", t).ok());
  ASSERT_TRUE((*w)->Add("names", Tensor::Scalar<std::string>("n")).ok());
  if (extra) ASSERT_TRUE((*w)->Add("zextra", Tensor::Scalar<int64_t>(1)).ok());
  ASSERT_TRUE((*w)->Finish().ok());
}

TEST(InspectTest, ListsOneLinePerTensor) {
  ScratchDir dir;
  Write(dir / "a", 0, false);
  std::ostringstream out;
  auto prefix = ListCheckpoint(dir / "a", out);
  ASSERT_TRUE(prefix.ok()) << prefix.status();
  std::istringstream lines(out.str());
  std::string first, second;
  std::getline(lines, first);
  std::getline(lines, second);
  std::istringstream f(first);
  std::string name, dtype, shape, size;
  f >> name >> dtype >> shape >> size;
  EXPECT_EQ(name, "layer/kernel");
  EXPECT_EQ(dtype, "float32");
  EXPECT_EQ(shape, "[2,3]");
  EXPECT_EQ(size, "24");
  EXPECT_EQ(second.rfind("names", 0), 0u);
}

TEST(InspectTest, DiffFindsDifferencesAndMaxAbsDiff) {
  ScratchDir dir;
  Write(dir / "a", 0, false);
  Write(dir / "b", 0, false);
  Write(dir / "c", 0.5f, true);
  std::ostringstream same;
  auto d = DiffCheckpoints(dir / "a", dir / "b", same);
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->equal()) << same.str();
  std::ostringstream out;
  auto d2 = DiffCheckpoints(dir / "a", dir / "c", out);
  ASSERT_TRUE(d2.ok());
  EXPECT_EQ(d2->differing, 2);
  EXPECT_NE(out.str().find("layer/kernel: float32[2,3] 1 of 6 elements differ, max abs diff 0.5"),
            std::string::npos)
      << out.str();
  EXPECT_NE(out.str().find("zextra: only in"), std::string::npos);
  std::ostringstream err;
  EXPECT_EQ(DiffCheckpoints(dir / "a", dir / "missing", err).status().code(),
            StatusCode::kNotFound);
}

}  // namespace
}  // namespace troupe::ckpt
