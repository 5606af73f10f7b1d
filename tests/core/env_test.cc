// core/env.h: the POSIX Env's files, atomic write, listings and errors; the FaultEnv wrapper;
// core/proto_wire.h's encodings.
#include "core/env.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "core/proto_wire.h"
#include "tests/testutil/fault_env.h"

namespace troupe {
namespace {

class EnvTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (std::filesystem::temp_directory_path() / "troupe_env_XXXXXX").string();
    dir_ = ::mkdtemp(tmpl.data());
  }
  void TearDown() override { ASSERT_TRUE(env_->DeleteRecursively(dir_).ok()); }
  std::string Path(const std::string& name) const { return JoinPath(dir_, name); }
  Env* env_ = Env::Default();
  std::string dir_;
};

TEST_F(EnvTest, WriteFileAtomicallyReplacesWholeAndLeavesNoTemp) {
  const std::string p = Path("state");
  ASSERT_TRUE(env_->WriteFileAtomically(p, "one").ok());
  ASSERT_TRUE(env_->WriteFileAtomically(p, "two, longer").ok());
  EXPECT_EQ(*env_->ReadFileToString(p), "two, longer");
  EXPECT_EQ(*env_->GetChildren(dir_), std::vector<std::string>{"state"});
}

TEST_F(EnvTest, AtomicWriteThatFailsHalfWayKeepsTheOldContents) {
  const std::string p = Path("state");
  ASSERT_TRUE(env_->WriteFileAtomically(p, "old contents").ok());
  testutil::FaultEnv faulty(env_);
  faulty.FailWritesAfter(3);
  Status s = faulty.WriteFileAtomically(p, "new contents");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find(p + std::string(kTempMarker)), std::string::npos) << s;
  EXPECT_NE(s.message().find("Input/output error"), std::string::npos) << s;
  EXPECT_EQ(*env_->ReadFileToString(p), "old contents");
  EXPECT_EQ(*env_->GetChildren(dir_), std::vector<std::string>{"state"});

  faulty.DiskFull();
  s = faulty.WriteFileAtomically(p, "new contents");
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted) << s;
  EXPECT_EQ(*env_->ReadFileToString(p), "old contents");
  faulty.Heal();
  ASSERT_TRUE(faulty.WriteFileAtomically(p, "new contents").ok());
  EXPECT_EQ(*env_->ReadFileToString(p), "new contents");
}

TEST_F(EnvTest, ErrorsNameTheFileAndTheOsError) {
  auto r = env_->ReadFileToString(Path("missing"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find(Path("missing")), std::string::npos) << r.status();
  EXPECT_NE(r.status().message().find("No such file or directory"), std::string::npos);
  auto w = env_->NewWritableFile(Path("no/such/dir/file"));
  EXPECT_EQ(w.status().code(), StatusCode::kNotFound);
  EXPECT_NE(w.status().message().find(Path("no/such/dir/file")), std::string::npos);
  EXPECT_EQ(IoError("cannot write", "f", ENOSPC).code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(IoError("cannot open", "f", EACCES).code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(IoError("cannot read", "f", EIO).code(), StatusCode::kUnknown);
}

TEST_F(EnvTest, WritableFileBuffersAppendsAndAppendMode) {
  const std::string p = Path("log");
  {
    auto f = env_->NewWritableFile(p, {.buffer_bytes = 4096});
    ASSERT_TRUE(f.ok());
    ASSERT_TRUE((*f)->Append("abc").ok());
    ASSERT_TRUE((*f)->Append(std::string(10000, 'x')).ok());  // larger than the buffer
    ASSERT_TRUE((*f)->Append("def", 3).ok());
    EXPECT_EQ((*f)->size(), 10006u);
    ASSERT_TRUE((*f)->Sync().ok());
    ASSERT_TRUE((*f)->Close().ok());
    EXPECT_EQ((*f)->Append("late").code(), StatusCode::kFailedPrecondition);
  }
  EXPECT_EQ(*env_->ReadFileToString(p), "abc" + std::string(10000, 'x') + "def");
  {
    auto f = env_->NewWritableFile(p, {.append = true});
    ASSERT_TRUE(f.ok());
    ASSERT_TRUE((*f)->Append("+1\n").ok());
    ASSERT_TRUE((*f)->Flush().ok());
    EXPECT_EQ(*env_->GetFileSize(p), 10009u);
  }  // the destructor closes
  ASSERT_TRUE(env_->WriteStringToFile(Path("t"), "truncated").ok());
  ASSERT_TRUE(env_->WriteStringToFile(Path("t"), "cut").ok());
  EXPECT_EQ(*env_->ReadFileToString(Path("t")), "cut");
}

TEST_F(EnvTest, SequentialAndRandomAccessReads) {
  std::string data;
  for (int i = 0; i < 100000; ++i) data += static_cast<char>(i * 7);
  ASSERT_TRUE(env_->WriteStringToFile(Path("d"), data).ok());
  auto s = env_->NewSequentialFile(Path("d"), 4096);
  ASSERT_TRUE(s.ok());
  std::string got(10, '\0');
  ASSERT_EQ(*(*s)->Read(got.data(), 10), 10u);
  EXPECT_EQ(got, data.substr(0, 10));
  ASSERT_TRUE((*s)->Seek(99990).ok());
  EXPECT_EQ((*s)->Tell(), 99990u);
  ASSERT_EQ(*(*s)->Read(got.data(), 10), 10u);
  EXPECT_EQ(got, data.substr(99990));
  EXPECT_EQ(*(*s)->Read(got.data(), 10), 0u);  // end of file
  ASSERT_TRUE((*s)->Seek(5).ok());
  std::string big(50000, '\0');
  ASSERT_EQ(*(*s)->Read(big.data(), big.size()), big.size());
  EXPECT_EQ(big, data.substr(5, 50000));

  auto r = env_->NewRandomAccessFile(Path("d"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)->size(), data.size());
  ASSERT_TRUE((*r)->Read(1000, 10, got.data()).ok());
  EXPECT_EQ(got, data.substr(1000, 10));
  Status past = (*r)->Read(99995, 10, got.data());
  EXPECT_EQ(past.code(), StatusCode::kDataLoss);
  EXPECT_NE(past.message().find(Path("d")), std::string::npos) << past;
  EXPECT_FALSE(env_->NewRandomAccessFile(dir_).ok());  // a directory
  // Kernel files report size 0 but have text: read to the end.
  auto stat = env_->ReadFileToString("/proc/self/stat");
  ASSERT_TRUE(stat.ok()) << stat.status();
  EXPECT_NE(stat->find(" ("), std::string::npos) << *stat;
  EXPECT_EQ(env_->NewSequentialFile(dir_).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(EnvTest, DirectoriesListingsGlobAndRenames) {
  ASSERT_TRUE(env_->CreateDirectories(Path("a/b/c")).ok());
  ASSERT_TRUE(env_->CreateDirectories(Path("a/b/c")).ok());  // exists: fine
  EXPECT_TRUE(env_->IsDirectory(Path("a/b/c")));
  for (const char* n : {"z.rec", "b.rec", "m.txt"}) {
    ASSERT_TRUE(env_->WriteStringToFile(Path(std::string("a/") + n), n).ok());
  }
  EXPECT_EQ(*env_->GetChildren(Path("a")),
            (std::vector<std::string>{"b", "b.rec", "m.txt", "z.rec"}));
  EXPECT_EQ(*env_->Glob(Path("a/*.rec")),
            (std::vector<std::string>{Path("a/b.rec"), Path("a/z.rec")}));
  EXPECT_TRUE(env_->Glob(Path("a/*.none"))->empty());
  ASSERT_TRUE(env_->RenameFile(Path("a/m.txt"), Path("a/b/m.txt")).ok());
  EXPECT_FALSE(env_->FileExists(Path("a/m.txt")));
  EXPECT_EQ(*env_->ReadFileToString(Path("a/b/m.txt")), "m.txt");
  ASSERT_TRUE(env_->SyncDirectory(Path("a/b")).ok());
  ASSERT_TRUE(env_->DeleteFile(Path("a/b/m.txt")).ok());
  ASSERT_TRUE(env_->DeleteFile(Path("a/b/m.txt")).ok());  // already gone: fine
  ASSERT_TRUE(env_->DeleteRecursively(Path("a")).ok());
  EXPECT_FALSE(env_->FileExists(Path("a")));
  Status rename = env_->RenameFile(Path("gone"), Path("x"));
  EXPECT_EQ(rename.code(), StatusCode::kNotFound);
  EXPECT_NE(rename.message().find(Path("gone")), std::string::npos) << rename;
}

TEST(PathTest, JoinDirAndBase) {
  EXPECT_EQ(JoinPath("a", "b"), "a/b");
  EXPECT_EQ(JoinPath("a/", "b"), "a/b");
  EXPECT_EQ(JoinPath("a", "/abs"), "/abs");
  EXPECT_EQ(DirName("a/b/c"), "a/b");
  EXPECT_EQ(DirName("c"), ".");
  EXPECT_EQ(DirName("/c"), "/");
  EXPECT_EQ(BaseName("a/b/c/"), "c");
  EXPECT_NE(TempSuffix(), TempSuffix());
  EXPECT_EQ(TempSuffix().rfind(kTempMarker, 0), 0u);
}

TEST(ProtoWireTest, FixedVarintsAndFields) {
  char buf[8];
  EncodeFixed32(buf, 0x04030201u);
  EXPECT_EQ(std::string(buf, 4), std::string("\x01\x02\x03\x04", 4));
  EXPECT_EQ(DecodeFixed32(buf), 0x04030201u);
  EncodeFixed64(buf, 0x0807060504030201ull);
  EXPECT_EQ(DecodeFixed64(buf), 0x0807060504030201ull);

  std::string out;
  proto::PutVarintField(&out, 2, 300);  // tag 0x10, varint ac 02
  EXPECT_EQ(out, std::string("\x10\xac\x02", 3));
  out.clear();
  proto::PutLengthDelimited(&out, 1, "hi");
  EXPECT_EQ(out, std::string("\x0a\x02hi", 4));
  out.clear();
  proto::PutFloatField(&out, 2, 1.0f);  // tag 0x15, 0x3f800000 little-endian
  EXPECT_EQ(out, std::string("\x15\x00\x00\x80\x3f", 5));
  out.clear();
  proto::PutDoubleField(&out, 1, 1.0);  // tag 0x09
  EXPECT_EQ(out, std::string("\x09\x00\x00\x00\x00\x00\x00\xf0\x3f", 9));

  std::string_view in("\xff\xff\xff\xff\x0f", 5);
  uint32_t v;
  EXPECT_TRUE(GetVarint32(&in, &v));
  EXPECT_EQ(v, 0xffffffffu);
  std::string_view too_big("\x80\x80\x80\x80\x10", 5);
  EXPECT_FALSE(GetVarint32(&too_big, &v));
}

}  // namespace
}  // namespace troupe
