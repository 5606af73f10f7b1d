#include "input/record_check.h"

#include <functional>
#include <numeric>

#include "core/tensor_shape.h"
#include "input/file_sniff.h"
#include "input/image_decode.h"
#include "input/tfrecord.h"

namespace troupe::input {
namespace {

constexpr size_t kHeadBytes = 64;

int64_t Product(const std::vector<int64_t>& dims) {
  return std::accumulate(dims.begin(), dims.end(), int64_t{1}, std::multiplies<>());
}

std::string ShapeText(const std::vector<int64_t>& dims) { return TensorShape(dims).ToString(); }
std::string Quoted(std::string_view s) { return "\"" + std::string(s) + "\""; }

// input/example.h's KindName, with "empty feature" for one that holds no list.
std::string KindText(Feature::Kind k) {
  return k == Feature::Kind::kNone ? "empty feature" : KindName(k);
}

size_t Count(const Feature& f) {
  switch (f.kind) {
    case Feature::Kind::kBytes:
      return f.bytes.size();
    case Feature::Kind::kFloat:
      return f.floats.size();
    case Feature::Kind::kInt64:
      return f.int64s.size();
    default:
      return 0;
  }
}

// "bytes_list[1] (682 bytes, PNG image)", "int64_list[1] = [3]", "float_list[784]".
std::string DescribeFeature(const Feature& f) {
  std::string s = KindText(f.kind);
  if (f.kind == Feature::Kind::kNone) return s;
  s += "[" + std::to_string(Count(f)) + "]";
  if (f.kind == Feature::Kind::kBytes && f.bytes.size() == 1) {
    const std::string& v = f.bytes[0];
    const std::string_view kind = SniffKind(v);
    s += " (" + std::to_string(v.size()) + " bytes";
    if (kind == "text" && v.size() <= 24) {
      s += ", text " + Quoted(v);
    } else if (!kind.empty()) {
      s += ", " + std::string(kind);
    }
    s += ")";
  } else if (f.kind == Feature::Kind::kInt64 && !f.int64s.empty() && f.int64s.size() <= 3) {
    s += " = [";
    for (size_t i = 0; i < f.int64s.size(); ++i) {
      s += (i ? ", " : "") + std::to_string(f.int64s[i]);
    }
    s += "]";
  } else if (f.kind == Feature::Kind::kFloat && !f.floats.empty() && f.floats.size() <= 3) {
    s += " = [";
    for (size_t i = 0; i < f.floats.size(); ++i) {
      char v[32];
      std::snprintf(v, sizeof(v), "%g", f.floats[i]);
      s += (i ? ", " : "") + std::string(v);
    }
    s += "]";
  }
  return s;
}

bool IsImageKind(std::string_view kind) { return kind.ends_with(" image"); }

// The decode value that reads `kind` bytes: "png" / "jpeg", or "" for other images.
std::string DecodeFor(std::string_view kind) {
  if (kind == "PNG image") return "png";
  if (kind == "JPEG image") return "jpeg";
  return "";
}

// " (\"x\" is a bytes_list: set features.image.key = \"x\")" when exactly one feature of
// the record other than `other_key` has `kind`.
std::string KeyHint(const Example& ex, Feature::Kind kind, const std::string& other_key,
                    const std::string& config_key) {
  std::string only;
  int n = 0;
  for (const auto& [key, f] : ex) {
    if (f.kind == kind && key != other_key) {
      only = key;
      ++n;
    }
  }
  if (n != 1) return "";
  return " (" + Quoted(only) + " is a " + KindText(kind) + ": set " + config_key + " = " +
         Quoted(only) + "?)";
}

// What to set when the feature's list is not the kind `decode` reads.
std::string KindHint(const Feature& f, int64_t need) {
  const std::string set = ": set features.image.decode = ";
  if (f.kind == Feature::Kind::kFloat) return set + "\"float\"";
  if (f.kind == Feature::Kind::kInt64) {
    return set + "\"int64\" (ids, for an Embedding) or store the pixels as bytes";
  }
  if (f.kind == Feature::Kind::kBytes && f.bytes.size() == 1) {
    const std::string decode = DecodeFor(SniffKind(f.bytes[0]));
    if (!decode.empty()) return set + Quoted(decode);
    if (static_cast<int64_t>(f.bytes[0].size()) == need) return set + "\"raw\"";
  }
  return "";
}

void CheckEncodedImage(const FeatureSpec& im, const std::string& bytes,
                       std::vector<std::string>* problems) {
  const std::string name = Quoted(im.key);
  const std::string size = std::to_string(bytes.size()) + " bytes";
  const int64_t need = Product(im.shape);
  const std::string_view kind = SniffKind(bytes);
  const std::string want = im.decode == "png" ? "PNG image" : "JPEG image";
  if (im.decode == "raw") {
    if (IsImageKind(kind)) {
      const std::string decode = DecodeFor(kind);
      problems->push_back(
          name + " holds a " + std::string(kind) + " (" + size + "), not raw pixels: " +
          (decode.empty() ? "Troupe decodes PNG and JPEG only; re-encode the images as PNG"
                          : "set features.image.decode = " + Quoted(decode)));
    } else if (static_cast<int64_t>(bytes.size()) != need) {
      std::string p = name + " holds " + std::to_string(bytes.size()) +
                      " raw bytes, features.image.shape " + ShapeText(im.shape) + " needs " +
                      std::to_string(need);
      if (static_cast<int64_t>(bytes.size()) == 4 * need) {
        p += " (4 bytes per value: float32 pixels? decode = \"raw\" reads one uint8 per value; "
             "store float32 values as a float_list and set decode = \"float\")";
      }
      problems->push_back(p);
    }
    return;
  }
  if (kind != want) {
    std::string p = name + " holds " + size + " that are not a " + want;
    const std::string decode = DecodeFor(kind);
    if (!decode.empty()) {
      p += " but a " + std::string(kind) + ": set features.image.decode = " + Quoted(decode);
    } else if (static_cast<int64_t>(bytes.size()) == need) {
      p += " but exactly as many as features.image.shape " + ShapeText(im.shape) +
           " has values: raw pixels? set features.image.decode = \"raw\"";
    } else if (!kind.empty()) {
      p += " (they look like " + std::string(kind) + ")";
    }
    problems->push_back(p);
    return;
  }
  const int channels = im.shape.size() == 3 ? static_cast<int>(im.shape[2]) : 0;
  Result<Tensor> img =
      im.decode == "png" ? DecodePng(bytes, channels) : DecodeJpeg(bytes, channels);
  if (!img.ok()) {
    problems->push_back(name + " holds a " + want +
                        " that does not decode: " + img.status().message());
  } else if (img->shape() != TensorShape(im.shape)) {
    problems->push_back(name + " decodes to an image of shape " + img->shape().ToString() +
                        ", features.image.shape is " + ShapeText(im.shape) +
                        " (set it to the images' size; augment.resize resizes after that)");
  }
}

void CheckImage(const DataSourceSpec& spec, const Example& ex, std::vector<std::string>* problems) {
  const FeatureSpec& im = spec.image;
  const bool encoded = im.decode == "raw" || im.decode == "png" || im.decode == "jpeg";
  const Feature::Kind want = encoded                ? Feature::Kind::kBytes
                             : im.decode == "int64" ? Feature::Kind::kInt64
                                                    : Feature::Kind::kFloat;
  const int64_t need = Product(im.shape);
  auto it = ex.find(im.key);
  if (it == ex.end()) {
    problems->push_back("features.image.key = " + Quoted(im.key) +
                        ": the record has no such feature" +
                        KeyHint(ex, want, spec.label.key, "features.image.key"));
    return;
  }
  const Feature& f = it->second;
  const std::string decode = "features.image.decode = " + Quoted(im.decode);
  if (f.kind != want) {
    problems->push_back(
        decode + " reads " +
        (encoded ? "a bytes_list holding one encoded image" : "a " + KindText(want)) + ", " +
        Quoted(im.key) + " is a " + DescribeFeature(f) + KindHint(f, need));
    return;
  }
  if (encoded) {
    if (f.bytes.size() != 1) {
      problems->push_back(decode + " reads one image per record, " + Quoted(im.key) + " holds " +
                          std::to_string(f.bytes.size()) + " values");
      return;
    }
    CheckEncodedImage(im, f.bytes[0], problems);
    return;
  }
  if (static_cast<int64_t>(Count(f)) != need) {
    problems->push_back(Quoted(im.key) + " holds " + std::to_string(Count(f)) +
                        " values, features.image.shape " + ShapeText(im.shape) + " needs " +
                        std::to_string(need));
  }
}

void CheckLabel(const DataSourceSpec& spec, const Example& ex, std::vector<std::string>* problems) {
  const FeatureSpec& lb = spec.label;
  auto it = ex.find(lb.key);
  if (it == ex.end()) {
    problems->push_back("features.label.key = " + Quoted(lb.key) +
                        ": the record has no such feature" +
                        KeyHint(ex, Feature::Kind::kInt64, spec.image.key, "features.label.key"));
    return;
  }
  const Feature& f = it->second;
  if (f.kind != Feature::Kind::kInt64) {
    std::string p = "features.label.dtype = \"int64\" reads an int64_list of class ids, " +
                    Quoted(lb.key) + " is a " + DescribeFeature(f);
    if (f.kind == Feature::Kind::kBytes) {
      p += " (text labels? write the class ids 0 .. num_classes-1 as an int64_list)";
    } else if (f.kind == Feature::Kind::kFloat) {
      p += " (write the class ids as an int64_list)";
    }
    problems->push_back(p);
    return;
  }
  const int64_t need = Product(lb.shape);
  if (static_cast<int64_t>(f.int64s.size()) != need) {
    problems->push_back(Quoted(lb.key) + " holds " + std::to_string(f.int64s.size()) +
                        " values, features.label.shape " + ShapeText(lb.shape) + " needs " +
                        std::to_string(need));
    return;
  }
  for (int64_t v : f.int64s) {
    if (v < 0 || v >= spec.num_classes) {
      problems->push_back(Quoted(lb.key) + " holds " + std::to_string(v) +
                          ", outside [0, num_classes = " + std::to_string(spec.num_classes) + ")");
      return;
    }
  }
}

// Up to kHeadBytes of `path` as stored (compressed or not).
std::string RawHead(const std::string& path) {
  auto file = Env::Default()->NewSequentialFile(path, kHeadBytes);
  if (!file.ok()) return "";
  std::string head(kHeadBytes, '\0');
  Result<size_t> got = (*file)->Read(head.data(), head.size());
  head.resize(got.ok() ? *got : 0);
  return head;
}

// Up to kHeadBytes of `path` after decompression ("" when it does not inflate).
std::string InflatedHead(const std::string& path, Compression compression) {
  Result<std::unique_ptr<InputStream>> in = OpenInputStream(path, compression);
  if (!in.ok()) return "";
  std::string head(kHeadBytes, '\0');
  Result<size_t> got = (*in)->Read(head.data(), head.size());
  head.resize(got.ok() ? *got : 0);
  return head;
}

Status NotTFRecord(std::string_view files_key, const std::string& path, const std::string& what,
                   const std::string& fix) {
  return FailedPreconditionError(
      std::string(files_key) + ": " + path + " is not a TFRecord file: " + what + "; " +
      (fix.empty() ? std::string(files_key) +
                         " must match TFRecord files of tf.train.Example records "
                         "(tf.io.TFRecordWriter writes them; `troupe data convert` makes them "
                         "from IDX files)"
                   : fix));
}

// The compression framing of `path` against data.compression; OK when they agree.
Status CheckFraming(std::string_view files_key, const std::string& path, Compression compression) {
  const std::string head = RawHead(path);
  if (head.empty()) return Status::OK();  // an empty file holds no records
  const std::string_view kind = SniffKind(head);
  const std::string describe = DescribeFileStart(head);
  if (compression == Compression::kNone) {
    if (LooksLikeTFRecord(head)) return Status::OK();
    if (kind == "gzip data") {
      return NotTFRecord(files_key, path, describe, "set compression = \"GZIP\"");
    }
    if (kind == "zlib data") {
      return NotTFRecord(files_key, path, describe, "set compression = \"ZLIB\"");
    }
    return NotTFRecord(files_key, path, describe, "");
  }
  const bool gzip = compression == Compression::kGzip;
  if (kind == (gzip ? "gzip data" : "zlib data")) return Status::OK();
  const std::string name = gzip ? "GZIP" : "ZLIB";
  if (LooksLikeTFRecord(head)) {
    return FailedPreconditionError(std::string(files_key) + ": " + path +
                                   " is an uncompressed TFRecord file, but compression = \"" +
                                   name + "\": set compression = \"\"");
  }
  if (kind == "gzip data" || kind == "zlib data") {
    return FailedPreconditionError(std::string(files_key) + ": " + path + " holds " +
                                   std::string(kind) + ", but compression = \"" + name +
                                   "\": set compression = \"" + (gzip ? "ZLIB" : "GZIP") + "\"");
  }
  return NotTFRecord(files_key, path,
                     describe + ", not " + (gzip ? "gzip" : "zlib") + "-compressed data", "");
}

}  // namespace

std::string DescribeExample(const Example& example) {
  std::string s;
  for (const auto& [key, f] : example)
    s += (s.empty() ? "" : ", ") + key + ": " + DescribeFeature(f);
  return s.empty() ? "no features" : s;
}

std::vector<std::string> FeatureProblems(const DataSourceSpec& spec, const Example& example) {
  std::vector<std::string> problems;
  CheckImage(spec, example, &problems);
  CheckLabel(spec, example, &problems);
  return problems;
}

Result<std::string> CheckFirstRecord(const DataSourceSpec& spec,
                                     const std::vector<std::string>& files, Compression compression,
                                     std::string_view files_key) {
  const std::string key(files_key);
  for (const std::string& path : files) {
    TROUPE_RETURN_IF_ERROR(CheckFraming(files_key, path, compression));
    TROUPE_ASSIGN_OR_RETURN(auto reader, TFRecordReader::Open(path, {compression}));
    std::string record;
    Status read = reader->ReadRecord(&record);
    if (read.code() == StatusCode::kOutOfRange) continue;  // no records: try the next file
    if (read.code() == StatusCode::kDataLoss && compression != Compression::kNone &&
        !LooksLikeTFRecord(InflatedHead(path, compression))) {
      return NotTFRecord(files_key, path,
                         "it inflates to data that are not TFRecords (" +
                             DescribeFileStart(InflatedHead(path, compression)) + ")",
                         "");
    }
    if (!read.ok()) return FailedPreconditionError(key + ": " + read.message());
    Result<Example> example = ParseExample(record);
    if (!example.ok()) {
      return FailedPreconditionError(key + ": record 0 of " + path +
                                     " is not a tf.train.Example (" + example.status().message() +
                                     "); " + DescribeFileStart(record));
    }
    const std::vector<std::string> problems = FeatureProblems(spec, *example);
    if (problems.empty()) return record;
    std::string m =
        key + ": record 0 of " + path + " does not fit features.image and features.label (" +
        std::to_string(problems.size()) + (problems.size() == 1 ? " problem):" : " problems):");
    for (const std::string& p : problems) m += "\n  - " + p;
    m += "\n  the record holds " + DescribeExample(*example);
    return FailedPreconditionError(m);
  }
  return std::string();
}

}  // namespace troupe::input
