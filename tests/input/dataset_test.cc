#include "input/dataset.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <set>
#include <thread>

#include "core/philox.h"
#include "input/example.h"
#include "input/tfrecord.h"
#include "input_test_util.h"

namespace troupe::input {
namespace {

using testing::Batches;
using testing::Flat;
using testing::Iota;
using V = std::vector<int64_t>;

TEST(DatasetTest, RangeBatchDropRemainder) {
  EXPECT_EQ(Batches(Dataset::Range(7).Batch(3)), (std::vector<V>{{0, 1, 2}, {3, 4, 5}, {6}}));
  EXPECT_EQ(Batches(Dataset::Range(7).Batch(3, true)), (std::vector<V>{{0, 1, 2}, {3, 4, 5}}));
  EXPECT_EQ(Dataset::Range(7).Batch(3).element_spec()[0].shape, TensorShape({-1}));
  EXPECT_EQ(Dataset::Range(7).Batch(3, true).element_spec()[0].shape, TensorShape({3}));
  EXPECT_EQ(Dataset::Range(7).Batch(3).Cardinality(), 3);
  EXPECT_EQ(Flat(Dataset::Range(2, 11, 3)), (V{2, 5, 8}));
  EXPECT_EQ(Flat(Dataset::Range(5, 0, -2)), (V{5, 3, 1}));
}

TEST(DatasetTest, BadArgumentsAreDeferredErrors) {
  Dataset d = Dataset::Range(5).Batch(0).Repeat(2);
  EXPECT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(d.status().message().find("batch_size"), std::string::npos);
  EXPECT_FALSE(d.MakeIterator().ok());
  EXPECT_FALSE(Dataset::Range(5).Shard(2, 2).ok());
  EXPECT_FALSE(Dataset::Range(5).Shuffle(0, 1).ok());
}

TEST(DatasetTest, RepeatTakeSkipShard) {
  EXPECT_EQ(Flat(Dataset::Range(3).Repeat(2)), (V{0, 1, 2, 0, 1, 2}));
  EXPECT_EQ(Flat(Dataset::Range(3).Repeat().Take(7)), (V{0, 1, 2, 0, 1, 2, 0}));
  EXPECT_EQ(Flat(Dataset::Range(10).Skip(7)), (V{7, 8, 9}));
  EXPECT_EQ(Flat(Dataset::Range(10).Shard(3, 1)), (V{1, 4, 7}));
  EXPECT_EQ(Dataset::Range(10).Shard(3, 1).Cardinality(), 3);
  EXPECT_EQ(Flat(Dataset::Range(0).Repeat()), V{});  // empty input: repeat ends
  EXPECT_EQ(Dataset::Range(3).Repeat().Cardinality(), kInfiniteCardinality);
}

TEST(DatasetTest, MapChecksAndInfersSpec) {
  auto square = [](Element e) -> Result<Element> {
    int64_t v = e[0].scalar<int64_t>();
    return Element{Tensor::Scalar<int64_t>(v * v), Tensor::Scalar<float>(0.5f * v)};
  };
  Dataset d = Dataset::Range(4).Map(square);
  ASSERT_TRUE(d.ok()) << d.status();
  ASSERT_EQ(d.element_spec().size(), 2u);
  EXPECT_EQ(d.element_spec()[1].dtype, DType::kFloat32);
  EXPECT_EQ(Flat(d), (V{0, 1, 4, 9}));
  // A batched input keeps its unknown batch dim through the probe.
  Dataset b = Dataset::Range(5).Batch(2).Map([](Element e) -> Result<Element> { return e; });
  EXPECT_EQ(b.element_spec()[0].shape, TensorShape({-1}));
  // A failing function surfaces with its name.
  Dataset bad = Dataset::Range(3).Map(NativeFunction(
      [](Element e) -> Result<Element> {
        if (e[0].scalar<int64_t>() == 2) return InvalidArgumentError("two is bad");
        return e;
      },
      ElementSpec{TensorSpec{TensorShape{}, DType::kInt64, ""}}, "picky"));
  auto it = *bad.MakeIterator();
  ASSERT_TRUE(it->Next().ok());
  ASSERT_TRUE(it->Next().ok());
  auto third = it->Next();
  ASSERT_FALSE(third.ok());
  EXPECT_NE(third.status().message().find("picky"), std::string::npos);
}

void ExpectResumeExact(const std::function<Dataset()>& make, int k);

MapFunctionPtr SlowSquare() {
  return NativeFunction(
      [](Element e) -> Result<Element> {
        int64_t v = e[0].scalar<int64_t>();
        if (v % 7 == 0) std::this_thread::sleep_for(std::chrono::microseconds(200));
        if (v == 1000) return InvalidArgumentError("v is 1000");
        return Element{Tensor::Scalar<int64_t>(v * v)};
      },
      ElementSpec{TensorSpec{TensorShape{}, DType::kInt64, ""}}, "slow_square");
}

TEST(DatasetTest, ParallelMapKeepsOrderAndResumes) {
  auto seq = Flat(Dataset::Range(300).Map(SlowSquare()));
  EXPECT_EQ(Flat(Dataset::Range(300).Map(SlowSquare(), 4)), seq);
  EXPECT_EQ(Dataset::Range(3).Map(SlowSquare(), 4).node()->type(), "ParallelMap");
  for (int k : {0, 3, 100}) {
    ExpectResumeExact([] { return Dataset::Range(300).Map(SlowSquare(), 4).Batch(5); }, k);
  }
  // An error arrives in order, after the elements before it.
  auto it = *Dataset::Range(998, 1003).Map(SlowSquare(), 3).MakeIterator();
  EXPECT_TRUE(it->Next().ok());
  EXPECT_TRUE(it->Next().ok());
  EXPECT_FALSE(it->Next().ok());
}

TEST(DatasetTest, ShuffleIsAPermutationAndDeterministicPerSeed) {
  auto a = Flat(Dataset::Range(100).Shuffle(10, 42));
  auto b = Flat(Dataset::Range(100).Shuffle(10, 42));
  auto c = Flat(Dataset::Range(100).Shuffle(10, 43));
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_EQ(std::set<int64_t>(a.begin(), a.end()).size(), 100u);
  EXPECT_NE(a, Iota(0, 100));
  // With a buffer of 1 the order is unchanged; element i can move at most buffer-1 earlier.
  EXPECT_EQ(Flat(Dataset::Range(20).Shuffle(1, 3)), Iota(0, 20));
  for (size_t i = 0; i < a.size(); ++i) EXPECT_LE(a[i], static_cast<int64_t>(i) + 9);
}

TEST(DatasetTest, ReshuffleEachIterationAndRepeat) {
  Dataset d = Dataset::Range(20).Shuffle(20, 7).Repeat(2);
  auto v = Flat(d);
  ASSERT_EQ(v.size(), 40u);
  V e1(v.begin(), v.begin() + 20), e2(v.begin() + 20, v.end());
  EXPECT_NE(e1, e2);  // each epoch draws new seeds
  EXPECT_EQ(std::set<int64_t>(e2.begin(), e2.end()).size(), 20u);
  Dataset fixed = Dataset::Range(20).Shuffle(20, 7, /*reshuffle_each_iteration=*/false).Repeat(2);
  auto f = Flat(fixed);
  EXPECT_EQ(V(f.begin(), f.begin() + 20), V(f.begin() + 20, f.end()));
}

TEST(DatasetTest, PhiloxSkipMatchesDrawing) {
  PhiloxSingleSample a(87654321, 42), b(87654321, 42);
  for (int n : {0, 1, 3, 4, 5, 9, 17}) {
    PhiloxSingleSample c(87654321, 42);
    for (int i = 0; i < n; ++i) c();
    PhiloxSingleSample d(87654321, 42);
    d.Skip(n);
    EXPECT_EQ(c(), d()) << n;
  }
}

TEST(DatasetTest, PrefetchKeepsOrderAndErrors) {
  EXPECT_EQ(Flat(Dataset::Range(1000).Prefetch(8)), Iota(0, 1000));
  Dataset d = Dataset::Range(5)
                  .Map(NativeFunction(
                      [](Element e) -> Result<Element> {
                        if (e[0].scalar<int64_t>() == 3) return DataLossError("boom");
                        return e;
                      },
                      ElementSpec{TensorSpec{TensorShape{}, DType::kInt64, ""}}))
                  .Prefetch(4);
  auto it = *d.MakeIterator();
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(it->Next().ok());
  auto err = it->Next();
  ASSERT_FALSE(err.ok());
  EXPECT_EQ(err.status().code(), StatusCode::kDataLoss);
}

Result<Dataset> RangeOf(const Element& e) {
  int64_t v = e[0].scalar<int64_t>();
  return Dataset::Range(v * 10, v * 10 + v + 1);
}

TEST(DatasetTest, InterleaveOrderMatchesTfDefinition) {
  // Input 1,2,3 -> [10,11], [20,21,22], [30..33]; cycle 2, block 1.
  auto got = Flat(Dataset::Range(1, 4).Interleave(RangeOf, 2, 1));
  // When slot 0 runs dry the cycle moves on to slot 1 before slot 0 opens the next input.
  EXPECT_EQ(got, (V{10, 20, 11, 21, 22, 30, 31, 32, 33}));
  auto blocks = Flat(Dataset::Range(1, 4).Interleave(RangeOf, 2, 2));
  EXPECT_EQ(blocks, (V{10, 11, 20, 21, 22, 30, 31, 32, 33}));
  EXPECT_EQ(Flat(Dataset::Range(1, 4).FlatMap(RangeOf)), (V{10, 11, 20, 21, 22, 30, 31, 32, 33}));
}

TEST(DatasetTest, CacheServesLaterEpochsFromMemory) {
  int calls = 0;
  Dataset d = Dataset::Range(5)
                  .Map(NativeFunction(
                      [&calls](Element e) -> Result<Element> {
                        ++calls;
                        return e;
                      },
                      ElementSpec{TensorSpec{TensorShape{}, DType::kInt64, ""}}))
                  .Cache()
                  .Repeat(3);
  EXPECT_EQ(Flat(d), (V{0, 1, 2, 3, 4, 0, 1, 2, 3, 4, 0, 1, 2, 3, 4}));
  EXPECT_EQ(calls, 5);
}

// Saves after `k` elements, restores into a fresh iterator of a freshly built pipeline, and
// checks the rest equals an uninterrupted run.
void ExpectResumeExact(const std::function<Dataset()>& make, int k) {
  auto whole = Flat(make());
  auto it = *make().MakeIterator();
  std::vector<int64_t> seen;
  for (int i = 0; i < k; ++i) {
    auto e = *it->Next();
    if (!e.has_value()) break;  // shorter than k: save at the end
    for (int64_t j = 0; j < (*e)[0].num_elements(); ++j) seen.push_back((*e)[0].data<int64_t>()[j]);
  }
  auto state = it->Save();
  ASSERT_TRUE(state.ok()) << state.status();
  it.reset();
  auto fresh = *make().MakeIterator();
  ASSERT_TRUE(fresh->Restore(*state).ok());
  while (true) {
    auto e = fresh->Next();
    ASSERT_TRUE(e.ok()) << e.status();
    if (!*e) break;
    for (int64_t j = 0; j < (**e)[0].num_elements(); ++j)
      seen.push_back((**e)[0].data<int64_t>()[j]);
  }
  EXPECT_EQ(seen, whole) << "resume after " << k;
}

TEST(DatasetTest, SaveRestoreMidPipeline) {
  for (int k : {0, 1, 5, 13}) {
    ExpectResumeExact(
        [] { return Dataset::Range(50).Shuffle(16, 9).Repeat(2).Batch(4).Prefetch(3); }, k);
    ExpectResumeExact([] { return Dataset::Range(1, 6).Interleave(RangeOf, 3, 2).Shuffle(5, 1); },
                      k);
    ExpectResumeExact([] { return Dataset::Range(9).Cache().Repeat(3).Skip(2).Take(20); }, k);
    ExpectResumeExact([] { return Dataset::Range(30).Batch(7).Rebatch({2, 3}).Shard(2, 1); }, k);
  }
}

TEST(DatasetTest, PrefetchSaveWhileProducerRunsLosesNothing) {
  // Save races with the background thread; no element may be lost or repeated.
  for (int round = 0; round < 200; ++round) {
    auto make = [] { return Dataset::Range(64).Prefetch(16); };
    auto it = *make().MakeIterator();
    std::vector<int64_t> seen;
    for (int i = 0; i < round % 40; ++i) seen.push_back((**it->Next())[0].scalar<int64_t>());
    auto state = *it->Save();
    auto fresh = *make().MakeIterator();
    ASSERT_TRUE(fresh->Restore(state).ok());
    while (auto e = *fresh->Next()) seen.push_back((*e)[0].scalar<int64_t>());
    ASSERT_EQ(seen, Iota(0, 64)) << "round " << round;
  }
}

TEST(DatasetTest, StateNamesFollowTfIteratorKeys) {
  auto it = *Dataset::Range(10).Shuffle(4, 1).Batch(2).MakeIterator();
  ASSERT_TRUE(it->Next().ok());
  auto state = *it->Save();
  std::set<std::string> names;
  for (const auto& [n, t] : state) names.insert(n);
  EXPECT_TRUE(names.count("Iterator::Batch::Shuffle:num_random_samples")) << *names.begin();
  EXPECT_TRUE(names.count("Iterator::Batch::Shuffle::Range:next"));
  EXPECT_TRUE(names.count("Iterator::Batch::Shuffle:seed2"));
}

TEST(DatasetTest, CheckpointEntriesRoundTrip) {
  auto it = *Dataset::Range(10).Shuffle(4, 1).MakeIterator();
  ASSERT_TRUE(it->Next().ok());
  auto state = *it->Save();
  auto entries = ToCheckpointEntries(WorkerIteratorPath("train/iterator", 1), state);
  EXPECT_EQ(
      entries[0].first.rfind("train/iterator/worker_1/.ATTRIBUTES/ITERATOR_STATE/Iterator::", 0),
      0u)
      << entries[0].first;
  entries.emplace_back("model/kernel/.ATTRIBUTES/VARIABLE_VALUE", Tensor::Scalar<float>(1));
  auto back = FromCheckpointEntries("train/iterator/worker_1", entries);
  ASSERT_TRUE(back.ok());
  ASSERT_EQ(back->size(), state.size());
  for (size_t i = 0; i < state.size(); ++i) {
    EXPECT_EQ((*back)[i].first, state[i].first);
    EXPECT_TRUE((*back)[i].second.BitEqual(state[i].second));
  }
  EXPECT_EQ(FromCheckpointEntries("other", entries).status().code(), StatusCode::kNotFound);
}

TEST(DatasetTest, RestoreIntoDifferentPipelineFails) {
  auto it = *Dataset::Range(10).Shuffle(4, 1).MakeIterator();
  auto state = *it->Save();
  auto other = *Dataset::Range(10).Batch(2).MakeIterator();
  Status s = other->Restore(state);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("same input pipeline"), std::string::npos) << s;
}

class TFRecordDatasetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("troupe_tfds_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::vector<std::string> WriteShards(int files, int per_file, const std::string& comp = "") {
    std::vector<std::string> paths;
    int64_t id = 0;
    for (int f = 0; f < files; ++f) {
      std::string p = (dir_ / ("shard-" + std::to_string(f))).string();
      TFRecordWriterOptions o;
      o.compression = *CompressionFromName(comp);
      auto w = *TFRecordWriter::Open(p, o);
      for (int i = 0; i < per_file; ++i) {
        Example ex;
        ex["id"] = Feature::Int64s({id++});
        EXPECT_TRUE(w->WriteRecord(SerializeExample(ex)).ok());
      }
      EXPECT_TRUE(w->Close().ok());
      paths.push_back(p);
    }
    return paths;
  }
  static Dataset ParseIds(Dataset records) {
    return records.Map(NativeFunction(
        [](Element e) -> Result<Element> {
          return ParseSingleExample(e[0].scalar<std::string>(), {{"id", DType::kInt64, {}, {}}});
        },
        ElementSpec{TensorSpec{TensorShape{}, DType::kInt64, ""}}, "parse_id"));
  }
  std::filesystem::path dir_;
};

TEST_F(TFRecordDatasetTest, ReadsFilesInOrderAndInterleaved) {
  auto files = WriteShards(3, 4, "GZIP");
  TFRecordOptions o;
  o.compression_type = "GZIP";
  EXPECT_EQ(Flat(ParseIds(Dataset::TFRecord(files, o))), Iota(0, 12));
  Dataset inter = Dataset::FromFiles(files).Interleave(
      [o](const Element& f) -> Result<Dataset> {
        return Dataset::TFRecord(Dataset::FromFiles({f[0].scalar<std::string>()}), o);
      },
      2, 1, /*reads_files=*/true);
  EXPECT_EQ(Flat(ParseIds(inter)), (V{0, 4, 1, 5, 2, 6, 3, 7, 8, 9, 10, 11}));
}

TEST_F(TFRecordDatasetTest, ResumeMidFile) {
  auto files = WriteShards(2, 50);
  for (int k : {0, 7, 49, 50, 77}) {
    ExpectResumeExact([&] { return ParseIds(Dataset::TFRecord(files)).Shuffle(10, 3); }, k);
  }
}

TEST_F(TFRecordDatasetTest, CorruptRecordSkippedAndCounted) {
  auto files = WriteShards(1, 5);
  auto bytes = *ReadFileToString(files[0]);
  bytes[bytes.size() / 2] ^= 0x10;
  ASSERT_TRUE(WriteStringToFile(files[0], bytes).ok());
  auto fail = ParseIds(Dataset::TFRecord(files)).MakeIterator();
  ASSERT_TRUE(fail.ok());
  Status s;
  for (int i = 0; i < 6 && s.ok(); ++i) s = (*fail)->Next().status();
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find(files[0]), std::string::npos) << s;
  TFRecordOptions o;
  o.skip_corrupt = true;
  o.corrupt_counter = std::make_shared<std::atomic<int64_t>>(0);
  auto ids = Flat(ParseIds(Dataset::TFRecord(files, o)));
  EXPECT_EQ(ids.size(), 4u);
  EXPECT_EQ(o.corrupt_counter->load(), 1);
}

}  // namespace
}  // namespace troupe::input
