// Internal to the ckpt_tool test driver (tests/checkpoint/ckpt_tool*.cc; the manifest format and
// the subcommands are described in ckpt_tool.cc): manifest and tensor-file helpers shared by the
// subcommands, and one entry point per subcommand (argv as main got it; returns the exit code).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/result.h"
#include "core/status.h"
#include "core/tensor.h"
#include "core/tensor_shape.h"
#include "tests/testutil/strings.h"

namespace troupe::ckpt::tool {

struct ManifestLine {
  std::string key;
  DType dtype;
  TensorShape shape;
  std::string file;
  int shard = -1;
};

using troupe::testutil::Split;

// The lines of a manifest; files are resolved relative to the manifest's folder.
Result<std::vector<ManifestLine>> ReadManifest(const std::string& path);

// The tensor `m` describes, read from its raw file.
Result<Tensor> LoadTensor(const ManifestLine& m);

// The tensor `m` describes: read from its file when `load_values`, else zeros of its dtype and
// shape (objects built to restore into).
Result<Tensor> InitialValue(const ManifestLine& m, bool load_values);

// Writes `t` as a raw tensor file (the format LoadTensor reads).
Status SaveTensor(const Tensor& t, const std::string& path);

// Creates `out_dir` holding value(key) for every key as <file_prefix><i>.bin, listed in
// out_dir/manifest.tsv (the format ReadManifest reads).
Status WriteTensorDir(const std::string& out_dir, const std::string& file_prefix,
                      const std::vector<std::string>& keys,
                      const std::function<Result<Tensor>(const std::string& key)>& value);

// Prints `s` to stderr; returns exit code 1.
int Fail(const Status& s);

// keras-write / tree-write: builds objects with build(manifest lines, /*load_values=*/true)
// from MANIFEST (argv[3]) and writes their checkpoint at PREFIX (argv[2]).
template <typename Build>
int WriteObjects(int argc, char** argv, const char* usage, Build build) {
  if (argc < 4) return Fail(InvalidArgumentError(usage));
  auto lines = ReadManifest(argv[3]);
  if (!lines.ok()) return Fail(lines.status());
  auto objects = build(*lines, true);
  if (!objects.ok()) return Fail(objects.status());
  Status s = (*objects)->root.Write(argv[2]);
  return s.ok() ? 0 : Fail(s);
}

// Subcommands (ckpt_tool_bundle.cc, ckpt_tool_keras.cc, ckpt_tool_tree.cc, ckpt_tool_crash.cc).
int Write(int argc, char** argv);
int Dump(int argc, char** argv);
int KerasWrite(int argc, char** argv);
int KerasRead(int argc, char** argv);
int TreeWrite(int argc, char** argv);
int TreeRead(int argc, char** argv);
int CrashWriter(int argc, char** argv);
int VerifyLatest(int argc, char** argv);

}  // namespace troupe::ckpt::tool
