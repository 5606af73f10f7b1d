#include "input/text_classify.h"

#include <array>
#include <cctype>

#include "input/file_io.h"

namespace troupe::input {
namespace {

bool Blank(std::string_view s) {
  for (char c : s) {
    if (!std::isspace(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

// A batch of examples (uint16 ids [n, length], int32 labels [n]) -> (int32 ids, int32 labels).
Result<Element> ClassifyToModel(const Element& raw) {
  if (raw.size() != 2 || raw[0].dtype() != DType::kUInt16 || raw[0].rank() != 2 ||
      raw[1].dtype() != DType::kInt32 || raw[1].rank() != 1) {
    return InvalidArgumentError("text: expected (uint16 [n, length], int32 [n]) batches");
  }
  TROUPE_ASSIGN_OR_RETURN(Tensor ids, Tensor::Allocate(DType::kInt32, raw[0].shape()));
  for (int64_t i = 0; i < raw[0].num_elements(); ++i) {
    ids.data<int32_t>()[i] = raw[0].data<uint16_t>()[i];
  }
  return Element{std::move(ids), raw[1]};
}

}  // namespace

std::vector<std::string> TextEntries(std::string_view text) {
  std::vector<std::string> entries;
  std::string entry;
  auto finish = [&] {
    if (!entry.empty() && entry.back() == '\n') entry.pop_back();
    if (!Blank(entry)) entries.push_back(entry);
    entry.clear();
  };
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    const size_t next = end == std::string_view::npos ? text.size() : end + 1;
    if (end == std::string_view::npos) end = text.size();
    if (text.substr(at, end - at) == "%") {
      finish();
    } else {
      entry.append(text.substr(at, next - at));
    }
    at = next;
  }
  finish();
  return entries;
}

Status CheckClassCount(const DataSourceSpec& spec, const std::vector<std::string>& files) {
  const int64_t classes = static_cast<int64_t>(files.size());
  if (spec.num_classes != 0 && spec.num_classes != classes) {
    std::string names;
    for (size_t i = 0; i < files.size() && i < 3; ++i) names += (i ? ", " : "") + files[i];
    if (files.size() > 3) names += ", ...";
    return InvalidArgumentError(
        "num_classes = " + std::to_string(spec.num_classes) +
        ", but text_labels = \"file\" makes one class per file and files = \"" + spec.files +
        "\" matches " + std::to_string(classes) + " (" + names +
        "); set num_classes = " + std::to_string(classes) + " or leave it out");
  }
  return Status::OK();
}

Result<SourceData> OpenTextClassification(const DataSourceSpec& spec, DataSplit split,
                                          const std::vector<std::string>& files) {
  TROUPE_RETURN_IF_ERROR(CheckClassCount(spec, files));
  const int64_t classes = static_cast<int64_t>(files.size());
  std::vector<std::string> texts;
  std::array<bool, 256> present{};
  for (const std::string& f : files) {
    Result<std::string> contents = ReadFileToString(f);
    if (!contents.ok()) return contents.status().WithContext("text source");
    for (char c : *contents) present[static_cast<uint8_t>(c)] = true;
    texts.push_back(std::move(*contents));
  }
  // The LM's sorted-byte vocabulary, shifted by one: 0 pads.
  std::array<uint16_t, 256> ids{};
  int vocab = 0;
  for (int b = 0; b < 256; ++b) {
    if (present[static_cast<size_t>(b)])
      ids[static_cast<size_t>(b)] = static_cast<uint16_t>(++vocab);
  }
  const bool train = split == DataSplit::kTrain;
  std::vector<std::pair<std::string, int32_t>> examples;
  for (size_t f = 0; f < files.size(); ++f) {
    std::vector<std::string> entries = TextEntries(texts[f]);
    for (size_t k = 0; k < entries.size(); ++k) {
      const bool eval = static_cast<int64_t>(k) % kTextEvalEvery == kTextEvalEvery - 1;
      if (eval != train) examples.emplace_back(std::move(entries[k]), static_cast<int32_t>(f));
    }
  }
  const int64_t n = static_cast<int64_t>(examples.size());
  if (n == 0) {
    return InvalidArgumentError(
        "files = \"" + spec.files + "\": text_labels = \"file\" finds no " +
        (train ? "training" : "evaluation") +
        " entry (entries are separated by lines holding only \"%\"; every " +
        std::to_string(kTextEvalEvery) + "th entry of a file evaluates)");
  }
  const int64_t length = spec.sequence_length;
  TROUPE_ASSIGN_OR_RETURN(Tensor x, Tensor::Allocate(DType::kUInt16, TensorShape{n, length}));
  TROUPE_ASSIGN_OR_RETURN(Tensor y, Tensor::Allocate(DType::kInt32, TensorShape{n}));
  for (int64_t i = 0; i < n; ++i) {
    const std::string& e = examples[static_cast<size_t>(i)].first;
    uint16_t* row = x.data<uint16_t>() + i * length;
    for (int64_t j = 0; j < length; ++j) {
      row[j] = j < static_cast<int64_t>(e.size())
                   ? ids[static_cast<uint8_t>(e[static_cast<size_t>(j)])]
                   : uint16_t{0};
    }
    y.data<int32_t>()[i] = examples[static_cast<size_t>(i)].second;
  }
  SourceData out;
  out.examples = Dataset::FromTensorSlices({std::move(x), std::move(y)});
  out.to_model = ClassifyToModel;
  out.feature_shape = TensorShape{length};
  out.num_classes = classes;
  out.input_range = "the first " + std::to_string(length) +
                    " characters of an entry as int32 ids in [1, " + std::to_string(vocab) +
                    "], 0-padded at the end; labels: its file's index in [0, " +
                    std::to_string(classes) + ")";
  return out;
}

}  // namespace troupe::input
