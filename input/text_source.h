// The "text" data source: a character-level language-modelling set from plain text files
// (`data.files`, a glob, read in sorted order and concatenated). The vocabulary is the sorted
// set of distinct bytes of the whole text, so ids depend only on the files; the first 90 % of
// the text trains and the rest evaluates (nanoGPT's split). An example is a window of
// `data.sequence_length` characters (features) and the same window shifted by one (labels);
// windows do not overlap. With `data.text_labels = "file"` it makes a classification set
// instead: one example per entry of fortune-style files (entries separated by lines holding only
// "%"), labelled with its file's index among the sorted files (text_classify.h).
#pragma once

#include "input/data_source.h"

namespace troupe::input {

Result<SourceData> OpenTextSource(const DataSourceSpec& spec, DataSplit split,
                                  const InputContext& context);
// The source as registered: OpenTextSource with its keys (files, sequence_length,
// text_labels, num_classes).
DataSource TextSource();

}  // namespace troupe::input
