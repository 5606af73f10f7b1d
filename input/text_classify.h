// Internal to input/: the text source's classification mode (`data.text_labels = "file"`), a
// set of fortune-style files where each file is a class. Entries are the text between lines
// holding only "%" (the `fortunes` format, /usr/share/games/fortunes/*.u8); an entry with no
// byte other than whitespace is skipped. An example is one entry:
//   features  its first `data.sequence_length` bytes as ids in the sorted-byte vocabulary of all
//             the files (the character LM's), plus 1 so that 0 pads: an entry shorter than
//             the length is padded with 0 at its end (Keras' Embedding(mask_zero=True) masks
//             those), one longer is cut; int32 [sequence_length]
//   labels    the index of its file among the sorted files `data.files` matches; int32 []
// `data.num_classes` may be left out (it is the file count); set, it must equal the file count.
// The evaluation split is every 10th entry of each file (the entries 9, 19, 29, ... counting
// from 0 the file's non-empty entries); the rest train. Examples are in file order, then entry
// order: the training loop shuffles, shards and checkpoints their positions as for the LM.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "input/data_source.h"

namespace troupe::input {

// An entry of every 10th (index % kTextEvalEvery == kTextEvalEvery - 1) of a file evaluates.
inline constexpr int64_t kTextEvalEvery = 10;

// The entries of a fortune-style text: the text between lines holding only "%" (a line ends at
// '\n'; the newline ending an entry's last line is not part of it); entries holding nothing but
// whitespace are left out.
std::vector<std::string> TextEntries(std::string_view text);

// OK when spec.num_classes is unset (0) or the number of `files`; else an InvalidArgument naming
// num_classes, the glob and the count.
Status CheckClassCount(const DataSourceSpec& spec, const std::vector<std::string>& files);

// The classification examples of `files` (sorted, already matched from spec.files).
Result<SourceData> OpenTextClassification(const DataSourceSpec& spec, DataSplit split,
                                          const std::vector<std::string>& files);

}  // namespace troupe::input
