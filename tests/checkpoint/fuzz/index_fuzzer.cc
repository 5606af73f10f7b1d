// libFuzzer target for everything that parses untrusted checkpoint bytes without touching the
// file system: the `.index` table (footer, block handles, checksums, prefix-compressed
// entries), the bundle header and entry protos, the string-tensor layout and the text state
// file. Each input goes through all of them; any crash, sanitizer report, leak or
// out-of-memory is a finding. Seeds: the TF-written fixture indexes and Troupe-written ones.
#include <google/protobuf/text_format.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "checkpoint/bundle_format.h"
#include "checkpoint/proto/checkpoint_state.pb.h"
#include "checkpoint/string_codec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace troupe::ckpt;
  std::string_view input(reinterpret_cast<const char*>(data), size);

  // 1. The whole input as an index file, exactly as BundleReader::Open parses one.
  auto index = ParseBundleIndex(input, "fuzz.index");
  if (index.ok()) {
    for (const BundleEntry& e : index->entries) (void)SliceKey(e.key, {});
  }

  // 2. The input as one entry value and as a header value.
  BundleHeader header;
  header.num_shards = 3;
  (void)ParseBundleEntry("tensor", input, header, "fuzz.index");
  (void)ParseBundleHeader(input, "fuzz.index");

  // 3. The input as a stored string tensor / variant tensor with a small element count.
  if (size > 0) {
    int64_t count = data[0] % 17;
    std::vector<std::string> out(static_cast<size_t>(count));
    (void)DecodeStringTensor(input.substr(1), count, 0, "fuzz", out.data());
    (void)VerifyVariantTensor(input.substr(1), count, 0, "fuzz");
  }

  // 4. The input as a `checkpoint` state file.
  troupe::tfproto::CheckpointState state;
  google::protobuf::TextFormat::Parser parser;
  parser.AllowPartialMessage(true);
  (void)parser.ParseFromString(std::string(input), &state);
  return 0;
}
