// input_driver: runs a Troupe input pipeline described on the command line and prints what it
// produced as JSON, for the interop tests (tests/interop/input_*.py) that build the same
// pipeline with tf.data / tf.distribute and compare.
//
//   input_driver iterate --pipeline SPEC [--limit N] [--save-after K --state F] [--restore F]
//   input_driver distribute --pipeline SPEC --workers W --replicas N [--mode dataset|function]
//                [--global-batch G] [--steps S] [--save-after K --state F] [--restore F]
//   input_driver write-tfrecord --out F --start S --count N [--compression C]
//   input_driver read-tfrecord --files F1,F2 [--compression C]
//   input_driver read-raw --file F [--compression C] [--skip-corrupt]
//   input_driver decode-image --file F --format png|jpeg [--channels C] [--dct fast|accurate]
//                [--out RAW] [--repeat N]
//   input_driver resize --in RAW --shape N,H,W,C --size OH,OW --out RAW   (float32 raw files)
//
// SPEC is "source|op|op...": sources range:N, range:A:B, tfrecord:C:F1,F2 (C = none/GZIP/ZLIB;
// records parsed to their int64 "id"), tfinterleave:CYCLE:BLOCK:F1,F2, fashion:SPLIT (elements
// (index, image, label)); ops shuffle:BUF:SEED[:fixed], batch:G[:drop], batch:ctx[:drop],
// map (identity), scale (image to float32 / 255), repeat[:K], take:K, skip:K, shard:N:I,
// shard:ctx, prefetch:K, cache, interleave-ranges:CYCLE:BLOCK, options:POLICY.
// Ids printed per element are the int64 values of component 0.
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include "input/dataset.h"
#include "input/distribute.h"
#include "input/example.h"
#include "input/idx.h"
#include "input/tf_compat/distributed_dataset.h"
#include "input/tfrecord.h"
#include "state_file.h"
#include "tests/input/input_driver.h"
#include "tests/testutil/strings.h"

namespace troupe::input {

using tf_compat::DistributedDataset;
using tf_compat::DistributedIterator;

std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

namespace {

using troupe::testutil::Split;

std::string Ids(const Element& e) {
  std::string out = "[";
  const Tensor& t = e[0];
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    if (i) out += ",";
    out += std::to_string(t.data<int64_t>()[i]);
  }
  return out + "]";
}

Flags ParseFlags(int argc, char** argv) {
  Flags f;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--", 0) != 0) continue;
    a = a.substr(2);
    auto eq = a.find('=');
    if (eq != std::string::npos) {
      f.values[a.substr(0, eq)] = a.substr(eq + 1);
    } else if (i + 1 < argc && std::string(argv[i + 1]).rfind("--", 0) != 0) {
      f.values[a] = argv[++i];
    } else {
      f.values[a] = "1";
    }
  }
  return f;
}

const ElementSpec kIdSpec{TensorSpec{TensorShape{}, DType::kInt64, ""}};

Dataset ParseIds(const Dataset& records) {
  return records.Map(NativeFunction(
      [](Element e) -> Result<Element> {
        return ParseSingleExample(e[0].scalar<std::string>(), {{"id", DType::kInt64, {}, {}}});
      },
      kIdSpec, "parse_id"));
}

std::string CompressionArg(const std::string& c) { return c == "none" ? "" : c; }

Result<Dataset> BuildSource(const std::vector<std::string>& t) {
  if (t[0] == "range") {
    if (t.size() == 2) return Dataset::Range(std::stoll(t[1]));
    return Dataset::Range(std::stoll(t[1]), std::stoll(t[2]));
  }
  if (t[0] == "tfrecord") {
    TFRecordOptions o;
    o.compression_type = CompressionArg(t[1]);
    return ParseIds(Dataset::TFRecord(Dataset::FromFiles(Split(t[2], ',')), o));
  }
  if (t[0] == "tfinterleave") {
    int64_t cycle = std::stoll(t[1]), block = std::stoll(t[2]);
    Dataset files = Dataset::FromFiles(Split(t[3], ','));
    return ParseIds(files.Interleave(
        [](const Element& f) -> Result<Dataset> {
          return Dataset::TFRecord(Dataset::FromFiles({f[0].scalar<std::string>()}));
        },
        cycle, block, /*reads_files=*/true));
  }
  if (t[0] == "fashion") {
    TROUPE_ASSIGN_OR_RETURN(FashionMnistSplit d, LoadFashionMnist(t[1]));
    const int64_t n = d.labels.dim(0);
    std::vector<int64_t> idx(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) idx[i] = i;
    return Dataset::FromTensorSlices({Tensor::FromVector(idx), d.images, d.labels});
  }
  return InvalidArgumentError("unknown source " + t[0]);
}

Result<Dataset> BuildPipeline(const std::string& spec, const InputContext* ctx,
                              int64_t global_batch) {
  auto stages = Split(spec, '|');
  TROUPE_ASSIGN_OR_RETURN(Dataset ds, BuildSource(Split(stages[0], ':')));
  for (size_t i = 1; i < stages.size(); ++i) {
    auto t = Split(stages[i], ':');
    const std::string& op = t[0];
    if (op == "shuffle") {
      ds = ds.Shuffle(std::stoll(t[1]), std::stoll(t[2]), !(t.size() > 3 && t[3] == "fixed"));
    } else if (op == "batch") {
      int64_t b;
      if (t[1] == "ctx") {
        if (!ctx) return InvalidArgumentError("batch:ctx needs --mode function");
        TROUPE_ASSIGN_OR_RETURN(b, ctx->GetPerReplicaBatchSize(global_batch));
      } else {
        b = std::stoll(t[1]);
      }
      ds = ds.Batch(b, t.size() > 2 && t[2] == "drop");
    } else if (op == "map") {
      ds =
          ds.Map(NativeFunction([](Element e) -> Result<Element> { return e; }, ds.element_spec()));
    } else if (op == "scale") {
      ElementSpec spec = ds.element_spec();
      spec[1].dtype = DType::kFloat32;
      ds = ds.Map(NativeFunction(
          [](Element e) -> Result<Element> {
            TROUPE_ASSIGN_OR_RETURN(Tensor f, Tensor::Allocate(DType::kFloat32, e[1].shape()));
            const uint8_t* src = e[1].data<uint8_t>();
            float* dst = f.data<float>();
            for (int64_t i = 0; i < f.num_elements(); ++i) dst[i] = src[i] * (1.0f / 255.0f);
            e[1] = f;
            return e;
          },
          spec, "scale"));
    } else if (op == "repeat") {
      ds = ds.Repeat(t.size() > 1 ? std::stoll(t[1]) : -1);
    } else if (op == "take") {
      ds = ds.Take(std::stoll(t[1]));
    } else if (op == "skip") {
      ds = ds.Skip(std::stoll(t[1]));
    } else if (op == "shard") {
      if (t[1] == "ctx") {
        if (!ctx) return InvalidArgumentError("shard:ctx needs --mode function");
        ds = ds.Shard(ctx->num_input_pipelines, ctx->input_pipeline_id);
      } else {
        ds = ds.Shard(std::stoll(t[1]), std::stoll(t[2]));
      }
    } else if (op == "prefetch") {
      ds = ds.Prefetch(std::stoll(t[1]));
    } else if (op == "cache") {
      ds = ds.Cache();
    } else if (op == "interleave-ranges") {
      ds = ds.Interleave(
          [](const Element& e) -> Result<Dataset> {
            int64_t v = e[0].scalar<int64_t>();
            return Dataset::Range(v * 100, v * 100 + v + 1);
          },
          std::stoll(t[1]), std::stoll(t[2]));
    } else if (op == "options") {
      Options o;
      TROUPE_ASSIGN_OR_RETURN(o.auto_shard_policy, AutoShardPolicyFromName(t[1]));
      ds = ds.WithOptions(o);
    } else {
      return InvalidArgumentError("unknown op " + op);
    }
  }
  TROUPE_RETURN_IF_ERROR(ds.status());
  return ds;
}

int Fail(const Status& s) {
  std::cout << "{\"error\": " << JsonString(s.ToString()) << "}\n";
  return 0;
}

int Iterate(const Flags& f) {
  Result<Dataset> ds = BuildPipeline(f.Get("pipeline"), nullptr, 0);
  if (!ds.ok()) return Fail(ds.status());
  auto it = ds->MakeIterator();
  if (!it.ok()) return Fail(it.status());
  if (f.Has("restore")) {
    auto state = testing::ReadStateFile(f.Get("restore"));
    if (!state.ok()) return Fail(state.status());
    Status s = (*it)->Restore(*state);
    if (!s.ok()) return Fail(s);
  }
  const int64_t limit = f.Int("limit", int64_t{1} << 40);
  const int64_t save_after = f.Int("save-after", -1);
  std::ostringstream out;
  out << "{\"elements\": [";
  Status err;
  for (int64_t n = 0; n < limit; ++n) {
    if (n == save_after) {
      auto state = (*it)->Save();
      if (!state.ok()) return Fail(state.status());
      Status s = testing::WriteStateFile(f.Get("state"), *state);
      if (!s.ok()) return Fail(s);
      break;
    }
    auto e = (*it)->Next();
    if (!e.ok()) {
      err = e.status();
      break;
    }
    if (!*e) break;
    out << (n ? "," : "") << Ids(**e);
  }
  out << "]";
  if (!err.ok()) out << ", \"error\": " << JsonString(err.ToString());
  out << "}\n";
  std::cout << out.str();
  return 0;
}

int Distribute(const Flags& f) {
  const int64_t workers = f.Int("workers", 1);
  const int64_t replicas = f.Int("replicas", 1);
  const int64_t global_batch = f.Int("global-batch", 0);
  const std::string mode = f.Get("mode", "dataset");
  const int64_t max_steps = f.Int("steps", int64_t{1} << 40);
  const int64_t save_after = f.Int("save-after", -1);
  std::vector<std::unique_ptr<DistributedIterator>> its;
  std::ostringstream meta;
  for (int64_t w = 0; w < workers; ++w) {
    InputContext ctx{workers, w, replicas};
    Result<DistributedDataset> dd = InternalError("unset");
    if (mode == "function") {
      dd = DistributedDataset::FromFunction(
          [&](const InputContext& c) { return BuildPipeline(f.Get("pipeline"), &c, global_batch); },
          ctx);
    } else {
      Result<Dataset> ds = BuildPipeline(f.Get("pipeline"), nullptr, 0);
      if (!ds.ok()) return Fail(ds.status());
      dd = DistributedDataset::Distribute(*ds, ctx);
    }
    if (!dd.ok()) return Fail(dd.status());
    if (w == 0) {
      meta << ", \"batch_size\": " << dd->computed_batch_size()
           << ", \"policy\": " << JsonString(std::string(AutoShardPolicyName(dd->applied_policy())))
           << ", \"partial_batch_handling\": " << (dd->partial_batch_handling() ? "true" : "false");
    }
    auto it = dd->MakeIterator();
    if (!it.ok()) return Fail(it.status());
    if (f.Has("restore")) {
      auto state = testing::ReadStateFile(f.Get("restore") + ".w" + std::to_string(w));
      if (!state.ok()) return Fail(state.status());
      Status s = (*it)->Restore(*state);
      if (!s.ok()) return Fail(s);
    }
    its.push_back(std::move(it).value());
  }
  std::vector<std::string> steps(workers);
  std::vector<std::string> errors(workers);
  bool failed = false;
  for (int64_t step = 0; step < max_steps && !failed; ++step) {
    if (step == save_after) {
      for (int64_t w = 0; w < workers; ++w) {
        auto state = its[w]->Save();
        if (!state.ok()) return Fail(state.status());
        Status s = testing::WriteStateFile(f.Get("state") + ".w" + std::to_string(w), *state);
        if (!s.ok()) return Fail(s);
      }
      break;
    }
    int64_t total = 0;
    for (int64_t w = 0; w < workers; ++w) {
      auto c = its[w]->FetchLocal();
      if (!c.ok()) {
        errors[w] = c.status().ToString();
        failed = true;
      } else {
        total += *c;
      }
    }
    if (failed) break;
    bool done = false;
    for (int64_t w = 0; w < workers; ++w) {
      auto s = its[w]->FinishStep(total);
      if (!s.ok()) {
        errors[w] = s.status().ToString();
        failed = true;
        continue;
      }
      if (!*s) {
        done = true;
        continue;
      }
      std::string reps = "[";
      for (size_t r = 0; r < (*s)->size(); ++r) reps += (r ? "," : "") + Ids((**s)[r]);
      steps[w] += (steps[w].empty() ? "" : ",") + reps + "]";
    }
    if (done) break;
  }
  std::ostringstream out;
  out << "{\"workers\": [";
  for (int64_t w = 0; w < workers; ++w) {
    out << (w ? "," : "") << "{\"steps\": [" << steps[w] << "]";
    if (!errors[w].empty()) out << ", \"error\": " << JsonString(errors[w]);
    out << "}";
  }
  out << "]" << meta.str() << "}\n";
  std::cout << out.str();
  return 0;
}

int WriteTFRecord(const Flags& f) {
  TFRecordWriterOptions o;
  auto c = CompressionFromName(CompressionArg(f.Get("compression")));
  if (!c.ok()) return Fail(c.status());
  o.compression = *c;
  auto w = TFRecordWriter::Open(f.Get("out"), o);
  if (!w.ok()) return Fail(w.status());
  const int64_t start = f.Int("start", 0), count = f.Int("count", 10);
  for (int64_t id = start; id < start + count; ++id) {
    Example ex;
    ex["id"] = Feature::Int64s({id, -id});
    ex["feat"] = Feature::Floats({id * 0.5f, -1.25f, static_cast<float>(id) / 3.0f});
    ex["raw"] = Feature::Bytes({"rec-" + std::to_string(id), std::string("\0\xff", 2)});
    Status s = (*w)->WriteRecord(SerializeExample(ex));
    if (!s.ok()) return Fail(s);
  }
  Status s = (*w)->Close();
  if (!s.ok()) return Fail(s);
  std::cout << "{\"written\": " << count << "}\n";
  return 0;
}

std::string FeatureJson(const Feature& ft) {
  std::ostringstream o;
  o.precision(9);
  switch (ft.kind) {
    case Feature::Kind::kInt64:
      o << "{\"int64\": [";
      for (size_t i = 0; i < ft.int64s.size(); ++i) o << (i ? "," : "") << ft.int64s[i];
      break;
    case Feature::Kind::kFloat:
      o << "{\"float\": [";
      for (size_t i = 0; i < ft.floats.size(); ++i) o << (i ? "," : "") << ft.floats[i];
      break;
    case Feature::Kind::kBytes:
      o << "{\"bytes_hex\": [";
      for (size_t i = 0; i < ft.bytes.size(); ++i) {
        std::string hex;
        for (unsigned char ch : ft.bytes[i]) {
          char b[3];
          std::snprintf(b, sizeof(b), "%02x", ch);
          hex += b;
        }
        o << (i ? "," : "") << JsonString(hex);
      }
      break;
    default:
      o << "{\"none\": [";
  }
  o << "]}";
  return o.str();
}

int ReadTFRecord(const Flags& f) {
  TFRecordOptions o;
  o.compression_type = CompressionArg(f.Get("compression"));
  Dataset ds = Dataset::TFRecord(Split(f.Get("files"), ','), o);
  auto it = ds.MakeIterator();
  if (!it.ok()) return Fail(it.status());
  std::ostringstream out;
  out << "{\"records\": [";
  bool first = true;
  while (true) {
    auto e = (*it)->Next();
    if (!e.ok()) return Fail(e.status());
    if (!*e) break;
    auto ex = ParseExample((**e)[0].scalar<std::string>());
    if (!ex.ok()) return Fail(ex.status());
    out << (first ? "" : ",") << "{";
    first = false;
    bool ff = true;
    for (const auto& [k, v] : *ex) {
      out << (ff ? "" : ",") << JsonString(k) << ": " << FeatureJson(v);
      ff = false;
    }
    out << "}";
  }
  out << "]}\n";
  std::cout << out.str();
  return 0;
}

int ReadRaw(const Flags& f) {
  TFRecordReaderOptions o;
  auto c = CompressionFromName(CompressionArg(f.Get("compression")));
  if (!c.ok()) return Fail(c.status());
  o.compression = *c;
  o.skip_corrupt = f.Has("skip-corrupt");
  auto r = TFRecordReader::Open(f.Get("file"), o);
  if (!r.ok()) return Fail(r.status());
  int64_t count = 0;
  std::string rec;
  Status s;
  while ((s = (*r)->ReadRecord(&rec)).ok()) ++count;
  std::cout << "{\"count\": " << count << ", \"skipped\": " << (*r)->corrupt_records_skipped();
  if (s.code() != StatusCode::kOutOfRange) {
    std::cout << ", \"error\": " << JsonString(s.ToString())
              << ", \"code\": " << JsonString(std::string(StatusCodeName(s.code())));
  }
  std::cout << "}\n";
  return 0;
}

}  // namespace
}  // namespace troupe::input

int main(int argc, char** argv) {
  using namespace troupe::input;
  if (argc < 2) {
    std::cerr << "usage: input_driver iterate|distribute|write-tfrecord|read-tfrecord|read-raw|"
                 "decode-image|resize ...\n";
    return 2;
  }
  std::string cmd = argv[1];
  Flags f = ParseFlags(argc, argv);
  if (cmd == "iterate") return Iterate(f);
  if (cmd == "distribute") return Distribute(f);
  if (cmd == "write-tfrecord") return WriteTFRecord(f);
  if (cmd == "read-tfrecord") return ReadTFRecord(f);
  if (cmd == "read-raw") return ReadRaw(f);
  if (cmd == "decode-image") return DecodeImage(f);
  if (cmd == "resize") return Resize(f);
  std::cerr << "unknown command " << cmd << "\n";
  return 2;
}
