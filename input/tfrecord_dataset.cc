// TFRecord reading as a dataset: one "TFRecord" node per file (a reader, which auto-shard FILE
// recognises), combined over a file list with FlatMap exactly as tf.data.TFRecordDataset does.
// Iterator state is the byte offset of the next record in the (uncompressed) stream.
#include "core/logging.h"
#include "input/dataset_impl.h"
#include "input/tfrecord.h"

namespace troupe::input {
namespace internal {
namespace {

class TFRecordFileDataset final : public DatasetBase {
 public:
  TFRecordFileDataset(std::string path, TFRecordOptions options, Compression compression)
      : DatasetBase({TensorSpec{TensorShape{}, DType::kString, ""}}),
        path_(std::move(path)),
        options_(std::move(options)),
        compression_(compression) {}
  std::string_view type() const override { return "TFRecord"; }
  Result<DatasetPtr> WithInputs(std::vector<DatasetPtr>) const override {
    return DatasetPtr(std::make_shared<TFRecordFileDataset>(path_, options_, compression_));
  }
  Result<std::unique_ptr<IteratorBase>> MakeIterator(const std::string& parent) const override {
    return std::unique_ptr<IteratorBase>(new Iter(*this, parent));
  }

 private:
  class Iter final : public DatasetIterator<TFRecordFileDataset> {
   public:
    using DatasetIterator::DatasetIterator;
    Status GetNext(Element* out, bool* end) override {
      TROUPE_RETURN_IF_ERROR(EnsureOpen());
      std::string record;
      const int64_t skipped_before = reader_->corrupt_records_skipped();
      Status s = reader_->ReadRecord(&record);
      const int64_t newly_skipped = reader_->corrupt_records_skipped() - skipped_before;
      if (newly_skipped > 0 && dataset().options_.corrupt_counter) {
        *dataset().options_.corrupt_counter += newly_skipped;
      }
      if (s.code() == StatusCode::kOutOfRange) {
        *end = true;
        return Status::OK();
      }
      TROUPE_RETURN_IF_ERROR(s);
      *end = false;
      out->assign(1, Tensor::Scalar<std::string>(std::move(record)));
      return Status::OK();
    }
    Status Save(IteratorStateWriter* w) override {
      w->WriteScalar(prefix(), "offset", reader_ ? static_cast<int64_t>(reader_->offset()) : 0);
      return Status::OK();
    }
    Status Restore(const IteratorStateReader& r) override {
      TROUPE_ASSIGN_OR_RETURN(int64_t offset, r.ReadScalar(prefix(), "offset"));
      TROUPE_RETURN_IF_ERROR(EnsureOpen());
      return reader_->SeekTo(static_cast<uint64_t>(offset));
    }

   private:
    Status EnsureOpen() {
      if (reader_) return Status::OK();
      const auto& d = dataset();
      TFRecordReaderOptions ro;
      ro.compression = d.compression_;
      ro.buffer_bytes = d.options_.buffer_bytes;
      ro.skip_corrupt = d.options_.skip_corrupt;
      Result<std::unique_ptr<TFRecordReader>> r = TFRecordReader::Open(d.path_, ro);
      if (!r.ok()) return r.status().WithContext("TFRecordDataset");
      reader_ = std::move(r).value();
      return Status::OK();
    }
    std::unique_ptr<TFRecordReader> reader_;
  };

  std::string path_;
  TFRecordOptions options_;
  Compression compression_;
};

}  // namespace
}  // namespace internal

Dataset Dataset::TFRecord(Dataset files, TFRecordOptions options) {
  if (!files.ok()) return files;
  const ElementSpec& spec = files.element_spec();
  if (spec.size() != 1 || spec[0].dtype != DType::kString || spec[0].shape.rank() != 0) {
    return Error(InvalidArgumentError(
        "TFRecord: the files dataset must yield string scalars, got " + SpecString(spec)));
  }
  Result<Compression> compression = CompressionFromName(options.compression_type);
  if (!compression.ok()) return Error(compression.status().WithContext("TFRecord"));
  const Compression c = *compression;
  DatasetFn reader = [options, c](const Element& e) -> Result<Dataset> {
    return Dataset(
        std::make_shared<internal::TFRecordFileDataset>(e[0].scalar<std::string>(), options, c));
  };
  Result<DatasetPtr> d = internal::MakeInterleave(
      files, std::move(reader), 1, 1, /*flat_map=*/true,
      /*reads_files=*/true, ElementSpec{TensorSpec{TensorShape{}, DType::kString, ""}});
  if (!d.ok()) return Error(d.status());
  return Dataset(*d);
}

Dataset Dataset::TFRecord(std::vector<std::string> files, TFRecordOptions options) {
  if (files.empty()) return Error(InvalidArgumentError("TFRecord: no files given"));
  return TFRecord(FromFiles(std::move(files)), std::move(options));
}

}  // namespace troupe::input
