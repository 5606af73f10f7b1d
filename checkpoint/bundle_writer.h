// BundleWriter: writes a TensorFlow v2 tensor bundle (`<prefix>.index` plus
// `<prefix>.data-NNNNN-of-MMMMM` shards) that tf.train.load_checkpoint reads.
//
// Tensors are streamed to the shard files as they are added, straight from the tensor's own
// buffer (no second copy), with their crc32c computed on the same pass. Nothing appears under
// the final names until Finish(): files are written under temporary names, synced, and renamed
// into place (data first, index last), so a crash leaves either no checkpoint at `prefix` or a
// complete one. A writer destroyed without a successful Finish() removes its temporary files.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "checkpoint/bundle_format.h"
#include "checkpoint/table.h"
#include "core/env.h"
#include "core/tensor.h"

namespace troupe::ckpt {

struct BundleWriterOptions {
  int num_shards = 1;
  // fdatasync every file and fsync the directory, so a finished bundle survives power loss.
  bool sync = true;
  // Write shard files with O_DIRECT (see WritableFile): no page-cache copy, so save time and
  // CPU do not depend on the state of the page cache, and checkpoints do not evict other
  // cached data; a restore right after a save then reads from the device.
  bool direct_io = false;
  TableOptions index;
  // Where the files go: every create, write, sync, rename and delete of this writer goes
  // through it (tests pass a FaultEnv). REQUIRES: outlives the writer.
  Env* env = Env::Default();
};

class BundleWriter {
 public:
  // Creates the temporary shard files; the directory of `prefix` is created when missing.
  static Result<std::unique_ptr<BundleWriter>> Create(std::string prefix,
                                                      BundleWriterOptions options = {});
  ~BundleWriter();
  BundleWriter(const BundleWriter&) = delete;
  BundleWriter& operator=(const BundleWriter&) = delete;

  // Adds a CPU tensor under `key` to the shard holding the fewest bytes so far (deterministic).
  Status Add(std::string_view key, const Tensor& tensor);
  Status AddToShard(std::string_view key, const Tensor& tensor, int shard);

  // Adds a fixed-size tensor whose bytes arrive in pieces (e.g. copied off a device through a
  // small staging buffer): `produce` must call `write` with exactly dtype x shape bytes in all.
  using ChunkWriter = std::function<Status(const void* data, size_t n)>;
  Status AddChunked(std::string_view key, DType dtype, const TensorShape& shape, int shard,
                    const std::function<Status(const ChunkWriter& write)>& produce);

  // Syncs and renames the shards, then writes the index. The writer is done afterwards.
  Status Finish();

  const std::string& prefix() const { return prefix_; }
  int num_shards() const { return static_cast<int>(shards_.size()); }
  // Bytes of tensor data written so far.
  uint64_t bytes_written() const;

 private:
  struct Shard {
    std::string final_path;
    std::string temp_path;
    std::unique_ptr<WritableFile> file;
  };
  BundleWriter(std::string prefix, BundleWriterOptions options);
  Status CheckKey(std::string_view key, int shard);
  Status Record(BundleEntry entry);
  Status Fail(Status s);
  void RemoveTempFiles();

  std::string prefix_;
  BundleWriterOptions options_;
  std::vector<Shard> shards_;
  std::map<std::string, BundleEntry, std::less<>> entries_;
  Status error_;  // first failure; later calls return it
  bool finished_ = false;
};

}  // namespace troupe::ckpt
