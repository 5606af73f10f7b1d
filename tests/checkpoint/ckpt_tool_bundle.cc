// ckpt_tool write / dump: a tensor bundle with exactly the manifest's keys, and every tensor of
// a bundle back out.
#include <cstdlib>
#include <string>

#include "checkpoint/bundle_reader.h"
#include "checkpoint/bundle_writer.h"
#include "checkpoint/checkpoint_state.h"
#include "core/dtype.h"
#include "core/env.h"
#include "tests/checkpoint/ckpt_tool.h"

namespace troupe::ckpt::tool {

int Write(int argc, char** argv) {
  if (argc < 4) return Fail(InvalidArgumentError("write PREFIX MANIFEST [flags]"));
  BundleWriterOptions options;
  for (int i = 4; i < argc; ++i) {
    std::string flag = argv[i];
    if (flag == "--shards" && i + 1 < argc) {
      options.num_shards = std::atoi(argv[++i]);
    } else if (flag == "--block-size" && i + 1 < argc) {
      options.index.block_size = static_cast<size_t>(std::atoll(argv[++i]));
    } else if (flag == "--snappy-index") {
      options.index.snappy = true;
    } else {
      return Fail(InvalidArgumentError("unknown write flag " + flag));
    }
  }
  auto lines = ReadManifest(argv[3]);
  if (!lines.ok()) return Fail(lines.status());
  auto writer = BundleWriter::Create(argv[2], options);
  if (!writer.ok()) return Fail(writer.status());
  for (const auto& m : *lines) {
    auto t = LoadTensor(m);
    if (!t.ok()) return Fail(t.status());
    Status s = m.shard >= 0 ? (*writer)->AddToShard(m.key, *t, m.shard) : (*writer)->Add(m.key, *t);
    if (!s.ok()) return Fail(s);
  }
  Status s = (*writer)->Finish();
  return s.ok() ? 0 : Fail(s);
}

int Dump(int argc, char** argv) {
  if (argc < 4) return Fail(InvalidArgumentError("dump PREFIX OUTDIR"));
  auto prefix = ResolveCheckpointPrefix(argv[2]);
  if (!prefix.ok()) return Fail(prefix.status());
  auto reader = BundleReader::Open(*prefix);
  if (!reader.ok()) return Fail(reader.status());
  std::vector<std::string> keys;
  for (const BundleEntry& e : (*reader)->entries()) keys.push_back(e.key);
  Status s = WriteTensorDir(argv[3], "t", keys,
                            [&](const std::string& key) { return (*reader)->Read(key); });
  return s.ok() ? 0 : Fail(s);
}

}  // namespace troupe::ckpt::tool
