// Internal to the ckpt_tool test driver (tests/checkpoint/ckpt_tool*.cc; the manifest format and
// the subcommands are described in ckpt_tool.cc): manifest and tensor-file helpers shared by the
// subcommands, and one entry point per subcommand (argv as main got it; returns the exit code).
#pragma once

#include <string>
#include <vector>

#include "core/result.h"
#include "core/status.h"
#include "core/tensor.h"
#include "core/tensor_shape.h"

namespace troupe::ckpt::tool {

struct ManifestLine {
  std::string key;
  DType dtype;
  TensorShape shape;
  std::string file;
  int shard = -1;
};

// `s` cut at every `sep` (empty fields kept).
std::vector<std::string> Split(const std::string& s, char sep);

// The lines of a manifest; files are resolved relative to the manifest's folder.
Result<std::vector<ManifestLine>> ReadManifest(const std::string& path);

// The tensor `m` describes, read from its raw file.
Result<Tensor> LoadTensor(const ManifestLine& m);

// Writes `t` as a raw tensor file (the format LoadTensor reads).
Status SaveTensor(const Tensor& t, const std::string& path);

// The manifest's dims field: "d0,d1,..", empty for a scalar.
std::string Dims(const TensorShape& s);

// Prints `s` to stderr; returns exit code 1.
int Fail(const Status& s);

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
