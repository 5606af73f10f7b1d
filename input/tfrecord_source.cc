#include "input/tfrecord_source.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <numeric>

#include "core/thread_pool.h"
#include "input/example.h"
#include "input/image_decode.h"
#include "input/record_check.h"
#include "input/source_keys.h"
#include "input/tfrecord.h"

namespace troupe::input {
namespace {

int64_t Product(const std::vector<int64_t>& dims) {
  return std::accumulate(dims.begin(), dims.end(), int64_t{1}, std::multiplies<>());
}

std::string ShapeText(const std::vector<int64_t>& dims) { return TensorShape(dims).ToString(); }

// How one record becomes a row of the model's (features, labels).
class ExampleDecoder {
 public:
  ExampleDecoder(DataSourceSpec spec, Compression compression, std::vector<std::string> files)
      : spec_(std::move(spec)),
        compression_(compression),
        files_(std::move(files)),
        features_(ParsedFeatures(spec_)) {
    if (spec_.decode_threads > 1) {
      pool_ = std::make_shared<ThreadPool>(spec_.decode_threads - 1, "decode");
    }
  }

  DType feature_dtype() const {
    return spec_.image.decode == "int64" ? DType::kInt32 : DType::kFloat32;
  }

  // A batch of serialized records (string [n]) -> (features [n, ...], labels [n, ...]).
  Result<Element> Decode(const Element& batch) const {
    if (batch.size() != 1 || batch[0].dtype() != DType::kString || batch[0].rank() != 1) {
      return InvalidArgumentError("tfrecord: expected a batch of serialized records (string [n])");
    }
    const int64_t n = batch[0].dim(0);
    std::vector<int64_t> fshape{n}, lshape{n};
    fshape.insert(fshape.end(), spec_.image.shape.begin(), spec_.image.shape.end());
    lshape.insert(lshape.end(), spec_.label.shape.begin(), spec_.label.shape.end());
    TROUPE_ASSIGN_OR_RETURN(Tensor features,
                            Tensor::Allocate(feature_dtype(), TensorShape(fshape)));
    TROUPE_ASSIGN_OR_RETURN(Tensor labels, Tensor::Allocate(DType::kInt32, TensorShape(lshape)));
    std::vector<Status> errors(static_cast<size_t>(n));
    auto rows = [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        errors[static_cast<size_t>(i)] =
            DecodeRow(batch[0].data<std::string>()[i], i, &features, &labels);
      }
    };
    if (pool_ && n > 1) {
      pool_->ParallelFor(n, std::max<int64_t>(1, n / (2 * (pool_->num_threads() + 1))), rows);
    } else {
      rows(0, n);
    }
    for (int64_t i = 0; i < n; ++i) {
      const Status& s = errors[static_cast<size_t>(i)];
      if (!s.ok()) return Locate(batch[0].data<std::string>()[i], s);
    }
    return Element{std::move(features), std::move(labels)};
  }

 private:
  // What ParseSingleExample reads from each record: the image feature (bytes to decode, or an
  // int64/float list of its shape) and the int64 label. The same for every record.
  static std::vector<FixedLenFeature> ParsedFeatures(const DataSourceSpec& spec) {
    const FeatureSpec& im = spec.image;
    FixedLenFeature image{im.key, DType::kString, TensorShape{}, {}};
    if (im.decode == "int64") image = {im.key, DType::kInt64, TensorShape(im.shape), {}};
    if (im.decode == "float") image = {im.key, DType::kFloat32, TensorShape(im.shape), {}};
    return {image, {spec.label.key, DType::kInt64, TensorShape(spec.label.shape), {}}};
  }

  Status DecodeRow(const std::string& record, int64_t row, Tensor* features, Tensor* labels) const {
    const FeatureSpec& im = spec_.image;
    const FeatureSpec& lb = spec_.label;
    const int64_t fsize = Product(im.shape);
    const int64_t lsize = Product(lb.shape);
    TROUPE_ASSIGN_OR_RETURN(std::vector<Tensor> parsed, ParseSingleExample(record, features_));
    const int64_t* ids = parsed[1].data<int64_t>();
    int32_t* out_labels = labels->data<int32_t>() + row * lsize;
    for (int64_t i = 0; i < lsize; ++i) {
      if (ids[i] < 0 || ids[i] >= spec_.num_classes) {
        return InvalidArgumentError(
            "feature '" + lb.key + "' holds " + std::to_string(ids[i]) +
            ", outside [0, num_classes = " + std::to_string(spec_.num_classes) + ")");
      }
      out_labels[i] = static_cast<int32_t>(ids[i]);
    }
    if (im.decode == "int64") {
      const int64_t* v = parsed[0].data<int64_t>();
      int32_t* dst = features->data<int32_t>() + row * fsize;
      for (int64_t i = 0; i < fsize; ++i) dst[i] = static_cast<int32_t>(v[i]);
      return Status::OK();
    }
    float* dst = features->data<float>() + row * fsize;
    const float scale = static_cast<float>(im.scale), offset = static_cast<float>(im.offset);
    if (im.decode == "float") {
      const float* v = parsed[0].data<float>();
      for (int64_t i = 0; i < fsize; ++i) dst[i] = v[i] * scale + offset;
      return Status::OK();
    }
    TROUPE_ASSIGN_OR_RETURN(Tensor pixels, Pixels(parsed[0].data<std::string>()[0]));
    const uint8_t* src = pixels.data<uint8_t>();
    for (int64_t i = 0; i < fsize; ++i) dst[i] = static_cast<float>(src[i]) * scale + offset;
    return Status::OK();
  }

  // The image feature's uint8 pixels, exactly `shape`.
  Result<Tensor> Pixels(const std::string& bytes) const {
    const FeatureSpec& im = spec_.image;
    const int64_t size = Product(im.shape);
    if (im.decode == "raw") {
      if (static_cast<int64_t>(bytes.size()) != size) {
        return InvalidArgumentError("feature '" + im.key + "' holds " +
                                    std::to_string(bytes.size()) + " raw bytes, features." +
                                    "image.shape " + ShapeText(im.shape) + " needs " +
                                    std::to_string(size));
      }
      TROUPE_ASSIGN_OR_RETURN(Tensor t, Tensor::Allocate(DType::kUInt8, TensorShape(im.shape)));
      std::copy(bytes.begin(), bytes.end(), t.data<uint8_t>());
      return t;
    }
    const int channels = static_cast<int>(im.shape[2]);
    Result<Tensor> img =
        im.decode == "png" ? DecodePng(bytes, channels) : DecodeJpeg(bytes, channels);
    if (!img.ok()) return img.status().WithContext("feature '" + im.key + "'");
    if (img->shape() != TensorShape(im.shape)) {
      return InvalidArgumentError("feature '" + im.key + "' decodes to an image of shape " +
                                  img->shape().ToString() +
                                  ", features.image.shape = " + ShapeText(im.shape) +
                                  " (set augment.resize to take other sizes)");
    }
    return img;
  }

  // The error, naming the file and record that hold `record` (found again by scanning the
  // files: errors are rare, and records carry no origin through shuffles).
  Status Locate(const std::string& record, const Status& error) const {
    for (const std::string& file : files_) {
      Result<std::unique_ptr<TFRecordReader>> reader =
          TFRecordReader::Open(file, {compression_, kDefaultReadBufferBytes, false});
      if (!reader.ok()) continue;
      std::string r;
      for (int64_t index = 0;; ++index) {
        const uint64_t offset = (*reader)->offset();
        if (!(*reader)->ReadRecord(&r).ok()) break;
        if (r == record) {
          return Status(error.code(), "tfrecord " + file + ", record " + std::to_string(index) +
                                          " (offset " + std::to_string(offset) +
                                          "): " + Problems(record, error) +
                                          "; check features.image and features.label");
        }
      }
    }
    return error.WithContext("tfrecord: a record of the source's files");
  }

  // Every problem the set-up check finds in `record` (the decoder stops at the first) with the
  // keys it holds, or the decoder's `error` when the check finds none.
  std::string Problems(const std::string& record, const Status& error) const {
    Result<Example> example = ParseExample(record);
    if (!example.ok()) return error.message();
    const std::vector<std::string> problems = FeatureProblems(spec_, *example);
    if (problems.empty()) return error.message();
    std::string m;
    for (const std::string& p : problems) m += (m.empty() ? "" : "; ") + p;
    return m + " (the record holds " + DescribeExample(*example) + ")";
  }

  DataSourceSpec spec_;
  Compression compression_;
  std::vector<std::string> files_;
  std::vector<FixedLenFeature> features_;  // ParsedFeatures(spec_)
  std::shared_ptr<ThreadPool> pool_;
};

Status CheckFeatures(const DataSourceSpec& spec) {
  const FeatureSpec& im = spec.image;
  const std::string decodes[] = {"raw", "png", "jpeg", "int64", "float"};
  if (std::find(std::begin(decodes), std::end(decodes), im.decode) == std::end(decodes)) {
    return InvalidArgumentError("features.image.decode = \"" + im.decode +
                                "\" is not one of raw, png, jpeg, int64, float");
  }
  if (im.key.empty() || spec.label.key.empty()) {
    return InvalidArgumentError(
        "features.image.key and features.label.key name the "
        "Example features; neither may be empty");
  }
  if (im.shape.empty() || Product(im.shape) < 1) {
    return InvalidArgumentError(
        "features.image.shape must list the example's dimensions, "
        "e.g. [28, 28, 1]");
  }
  if ((im.decode == "png" || im.decode == "jpeg") && im.shape.size() != 3) {
    return InvalidArgumentError("features.image.decode = \"" + im.decode +
                                "\" needs shape [height, width, channels], got " +
                                ShapeText(im.shape));
  }
  if (im.decode == "int64" && (im.scale != 1.0 || im.offset != 0.0)) {
    return InvalidArgumentError(
        "features.image.scale and features.image.offset apply to pixel and float "
        "features; int64 features are ids, taken as they are");
  }
  if (spec.label.dtype != "int64") {
    return InvalidArgumentError("features.label.dtype = \"" + spec.label.dtype +
                                "\": the models' losses take integer class ids; store labels "
                                "as int64");
  }
  if (spec.num_classes < 1) {
    return InvalidArgumentError(
        "num_classes: the tfrecord source needs it >= 1 (labels "
        "are class ids in [0, num_classes))");
  }
  return Status::OK();
}

// "%g" of a double.
std::string Number(double v) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g", v);
  return text;
}

bool IsPixels(const FeatureSpec& im) {
  return im.decode == "raw" || im.decode == "png" || im.decode == "jpeg";
}

// The range of uint8 pixels after x * scale + offset, computed in float32 as the decoder does:
// "0..255", "0..1".
std::string PixelRange(const FeatureSpec& im) {
  const float scale = static_cast<float>(im.scale), offset = static_cast<float>(im.offset);
  const float a = 0.0f * scale + offset, b = 255.0f * scale + offset;
  return Number(std::min(a, b)) + ".." + Number(std::max(a, b));
}

// What the model's input holds: "image: raw uint8 bytes x scale 1 -> 0..255".
std::string InputRange(const FeatureSpec& im) {
  const std::string s = "image: ";
  if (im.decode == "int64") return s + "int64 ids as int32";
  std::string affine = " x scale " + Number(im.scale);
  if (im.offset != 0.0) affine += " + offset " + Number(im.offset);
  if (!IsPixels(im)) {
    if (im.scale == 1.0 && im.offset == 0.0) return s + "float32 values as stored";
    return s + "float32 values" + affine;
  }
  const std::string what = im.decode == "raw"   ? "raw uint8 bytes"
                           : im.decode == "png" ? "PNG uint8 pixels"
                                                : "JPEG uint8 pixels";
  return s + what + affine + " -> " + PixelRange(im);
}

// Pixels spanning more than ten units reach the model unscaled: Keras models expect about unit
// range, and Troupe's Keras import has no Rescaling layer to scale inside the model.
std::vector<std::string> InputWarnings(const FeatureSpec& im) {
  if (!IsPixels(im) || std::abs(im.scale) * 255.0 <= 10.0) return {};
  return {"pixels reach the model as " + PixelRange(im) +
          ": set features.image.scale = 0.00392156862745098 (1/255) for 0..1 (Troupe's "
          "Keras import has no Rescaling layer to scale inside the model)"};
}

}  // namespace

Result<int64_t> CountTFRecords(const std::string& path, Compression compression) {
  TROUPE_ASSIGN_OR_RETURN(auto reader, TFRecordReader::Open(path, {compression}));
  std::string record;
  for (int64_t n = 0;; ++n) {
    Status s = reader->ReadRecord(&record);
    if (s.code() == StatusCode::kOutOfRange) return n;
    TROUPE_RETURN_IF_ERROR(s);
  }
}

Result<SourceData> OpenTFRecordSource(const DataSourceSpec& spec, DataSplit split,
                                      const InputContext&) {
  TROUPE_RETURN_IF_ERROR(CheckFeatures(spec));
  TROUPE_ASSIGN_OR_RETURN(Compression compression, CompressionFromName(spec.compression));
  const bool train = split == DataSplit::kTrain;
  if (!train && spec.eval_files.empty()) {
    return NotFoundError(
        "eval_files: the tfrecord source has no evaluation split without it; set it to a glob "
        "of its files");
  }
  const std::string key = train ? "files" : "eval_files";
  TROUPE_ASSIGN_OR_RETURN(std::vector<std::string> files,
                          MatchFiles(train ? spec.files : spec.eval_files, key));
  TFRecordOptions options;
  options.compression_type = spec.compression;
  Dataset records = Dataset::TFRecord(Dataset::FromFiles(files), options);
  TROUPE_RETURN_IF_ERROR(records.status());
  auto decoder = std::make_shared<ExampleDecoder>(spec, compression, files);
  SourceData out;
  // Set-up check: the first record fits data.features (every problem in one message), and
  // decodes as every later record will.
  out.check_first_record = [spec, compression, key,
                            decoder](const std::vector<std::string>& some) -> Status {
    TROUPE_ASSIGN_OR_RETURN(std::string first, CheckFirstRecord(spec, some, compression, key));
    if (first.empty()) return Status::OK();
    TROUPE_ASSIGN_OR_RETURN(Tensor one, Tensor::Allocate(DType::kString, TensorShape{1}));
    one.data<std::string>()[0] = std::move(first);
    Result<Element> decoded = decoder->Decode({one});
    if (!decoded.ok()) return FailedPreconditionError(key + ": " + decoded.status().message());
    return Status::OK();
  };
  out.examples = std::move(records);
  out.to_model = [decoder](const Element& batch) { return decoder->Decode(batch); };
  out.feature_shape = TensorShape(spec.image.shape);
  out.num_classes = spec.num_classes;
  out.files = std::move(files);
  out.count_examples = [compression](const std::string& f) {
    return CountTFRecords(f, compression);
  };
  out.input_range = InputRange(spec.image);
  out.warnings = InputWarnings(spec.image);
  return out;
}

DataSource TFRecordSource() {
  using D = DataSourceSpec;
  using F = FeatureSpec;
  const std::string only = "only the tfrecord source reads tf.train.Example features";
  auto own = [&only](DataKey key) { return config::Only(std::move(key), only); };
  DataSource source;
  source.open = OpenTFRecordSource;
  source.keys = {
      FilesKey(),
      own(config::String<D>("eval_files", &D::eval_files, {},
                            "A glob of the evaluation TFRecord files, read in sorted order.")),
      own(config::String<D>("compression", &D::compression, {"", "GZIP", "ZLIB"},
                            "The TFRecord files' compression (tf.data's compression_type; \"\": "
                            "none).")),
      NumClassesKey(),
      own(config::String<D>("features.image.key", {&D::image, &F::key}, {},
                            "The tf.train.Example feature holding the model's input.")),
      own(config::String<D>("features.image.decode", {&D::image, &F::decode},
                            {"raw", "png", "jpeg", "int64", "float"},
                            "How the input is stored: raw uint8 bytes, an encoded png or jpeg, or "
                            "an int64_list or float_list of values.")),
      ImageShapeKey(),
      own(config::AnyNumber<D>("features.image.scale", {&D::image, &F::scale},
                               "The input is x * scale + offset, in float32.")),
      own(config::AnyNumber<D>("features.image.offset", {&D::image, &F::offset},
                               "Added to the input after scale.")),
      own(config::String<D>("features.label.key", {&D::label, &F::key}, {},
                            "The tf.train.Example feature holding the label.")),
      own(config::String<D>("features.label.dtype", {&D::label, &F::dtype}, {"int64", "float"},
                            "The label feature's list: int64_list or float_list.")),
      own(config::IntList<D>("features.label.shape", {&D::label, &F::shape}, 1,
                             "One example's label shape ([]: a scalar, the class id).")),
  };
  source.check = [](const DataSourceSpec& spec) -> Status {
    TROUPE_RETURN_IF_ERROR(NeedNumClasses(spec));
    if (!spec.files.empty()) return Status::OK();
    return InvalidArgumentError(
        "files: the tfrecord source needs it: set it to a glob of the training TFRecord files");
  };
  source.check_files = [](const DataSourceSpec& spec) -> Status {
    TROUPE_RETURN_IF_ERROR(MatchFiles(spec.files, "files").status());
    if (spec.eval_files.empty()) return Status::OK();
    return MatchFiles(spec.eval_files, "eval_files").status();
  };
  source.test_split = [](const DataSourceSpec& spec) -> Status {
    if (!spec.eval_files.empty()) return Status::OK();
    return InvalidArgumentError("eval_files: the tfrecord source evaluates only with it");
  };
  return source;
}

}  // namespace troupe::input
