#include "input/text_source.h"

#include <algorithm>
#include <array>

#include "input/file_io.h"
#include "input/source_keys.h"
#include "input/text_classify.h"

namespace troupe::input {
namespace {

constexpr double kTrainFraction = 0.9;

Result<std::string> ReadAll(const std::vector<std::string>& files) {
  std::string text;
  for (const std::string& f : files) {
    Result<std::string> contents = ReadFileToString(f);
    if (!contents.ok()) return contents.status().WithContext("text source");
    text += *contents;
  }
  return text;
}

// (features, labels) windows of `length` ids from text[begin, end).
Element Windows(const std::string& text, const std::array<int, 256>& ids, size_t begin, size_t end,
                int64_t length) {
  const int64_t n = end - begin > 0 ? static_cast<int64_t>(end - begin - 1) / length : 0;
  Tensor x = *Tensor::Allocate(DType::kUInt8, TensorShape{n, length});
  Tensor y = *Tensor::Allocate(DType::kUInt8, TensorShape{n, length});
  for (int64_t i = 0; i < n * length; ++i) {
    const size_t at = begin + static_cast<size_t>(i);
    x.data<uint8_t>()[i] = static_cast<uint8_t>(ids[static_cast<uint8_t>(text[at])]);
    y.data<uint8_t>()[i] = static_cast<uint8_t>(ids[static_cast<uint8_t>(text[at + 1])]);
  }
  return {std::move(x), std::move(y)};
}

// data.text_labels: "none" (the character LM) or "file" (text_classify.h).
DataKey TextLabelsKey() {
  DataKey key = config::String<DataSourceSpec>(
      "text_labels", &DataSourceSpec::text_labels, {"none", "file"},
      "text: \"none\" makes character-LM windows; \"file\" makes one example per entry "
      "(entries separated by lines holding only %) labelled with its file's index among the "
      "sorted files, for a classifier (num_classes: the file count).");
  return config::Only(std::move(key), "only the text source reads labels from its files");
}

// text_labels is one of its choices; num_classes goes only with "file".
Status CheckLabels(const DataSourceSpec& spec) {
  const std::string& labels = spec.text_labels;
  if (labels != "none" && labels != "file") {
    return InvalidArgumentError("text_labels = \"" + labels + "\" is not one of none, file");
  }
  if (labels == "none" && spec.num_classes != 0) {
    return InvalidArgumentError(
        "num_classes applies to the text source with text_labels = \"file\"; a language "
        "model's classes are its vocabulary (remove num_classes)");
  }
  return Status::OK();
}

Result<Element> TextToModel(const Element& raw) {
  if (raw.size() != 2 || raw[0].dtype() != DType::kUInt8 || raw[0].rank() != 2) {
    return InvalidArgumentError("text: expected (uint8 [n, length], uint8 [n, length]) batches");
  }
  Element out;
  for (const Tensor& t : raw) {
    TROUPE_ASSIGN_OR_RETURN(Tensor ids, Tensor::Allocate(DType::kInt32, t.shape()));
    for (int64_t i = 0; i < t.num_elements(); ++i) ids.data<int32_t>()[i] = t.data<uint8_t>()[i];
    out.push_back(std::move(ids));
  }
  return out;
}

}  // namespace

Result<SourceData> OpenTextSource(const DataSourceSpec& spec, DataSplit split,
                                  const InputContext&) {
  if (spec.sequence_length < 1) {
    return InvalidArgumentError("sequence_length: the text source needs it >= 1");
  }
  if (spec.files.empty()) {
    return InvalidArgumentError(
        "files: the text source needs a glob of text files (e.g. "
        "\"/usr/share/games/fortunes/*.u8\")");
  }
  TROUPE_RETURN_IF_ERROR(CheckLabels(spec));
  TROUPE_ASSIGN_OR_RETURN(std::vector<std::string> files, MatchFiles(spec.files, "files"));
  if (spec.text_labels == "file") return OpenTextClassification(spec, split, files);
  TROUPE_ASSIGN_OR_RETURN(std::string text, ReadAll(files));
  std::array<int, 256> ids{};
  std::array<bool, 256> present{};
  for (char c : text) present[static_cast<uint8_t>(c)] = true;
  int vocab = 0;
  for (int b = 0; b < 256; ++b) {
    if (present[static_cast<size_t>(b)]) ids[static_cast<size_t>(b)] = vocab++;
  }
  const size_t cut = static_cast<size_t>(static_cast<double>(text.size()) * kTrainFraction);
  Element windows = split == DataSplit::kTrain
                        ? Windows(text, ids, 0, cut, spec.sequence_length)
                        : Windows(text, ids, cut, text.size(), spec.sequence_length);
  if (windows[0].dim(0) == 0) {
    return InvalidArgumentError("files = \"" + spec.files + "\": " + std::to_string(text.size()) +
                                " characters are too few for one " +
                                std::to_string(spec.sequence_length) +
                                "-character example in each split");
  }
  SourceData out;
  out.examples = Dataset::FromTensorSlices(std::move(windows));
  out.to_model = TextToModel;
  out.feature_shape = TensorShape{spec.sequence_length};
  out.num_classes = vocab;
  out.input_range = "characters as int32 ids in [0, " + std::to_string(vocab) + ")";
  return out;
}

DataSource TextSource() {
  DataSource source;
  source.open = OpenTextSource;
  source.keys = {FilesKey(),
                 config::Only(config::Int<DataSourceSpec>(
                                  "sequence_length", &DataSourceSpec::sequence_length, 1,
                                  "text: characters per example (the model's "
                                  "context length)."),
                              "only the text source makes sequences"),
                 TextLabelsKey(), NumClassesKey()};
  source.images = false;
  source.check = CheckLabels;
  source.check_files = [](const DataSourceSpec& spec) -> Status {
    if (spec.files.empty()) return Status::OK();  // OpenTextSource says what to set
    TROUPE_ASSIGN_OR_RETURN(std::vector<std::string> files, MatchFiles(spec.files, "files"));
    return spec.text_labels == "file" ? CheckClassCount(spec, files) : Status::OK();
  };
  return source;
}

}  // namespace troupe::input
