#include "input/source_keys.h"

namespace troupe::input {

using D = DataSourceSpec;
using F = FeatureSpec;

std::vector<DataKey> CommonDataKeys() {
  DataKey source = config::String<D>(
      "source", &D::source, {},
      "Where examples come from: fashion_mnist reads the IDX files in `dir`; text makes "
      "character-level language-model windows of the files `files` matches (or, with "
      "text_labels = \"file\", one example per entry labelled by its file); tfrecord reads "
      "tf.train.Example records (features.*); synthetic makes random examples; or a source the "
      "program registered (input/data_source.h).");
  source.choices_from = RegisteredDataSourceNames;
  return {
      source,
      config::String<D>("dir", &D::dir, {},
                        "Directory of the dataset's files (Fashion-MNIST: the four IDX .gz "
                        "files)."),
      config::Int<D>("decode_threads", &D::decode_threads, 0,
                     "Threads decoding one replica's batch (0: automatic)."),
  };
}

DataKey FilesKey() {
  return config::Only(config::String<D>("files", &D::files, {},
                                        "A glob of the training files, read in sorted order "
                                        "(text: plain text; tfrecord: TFRecord files)."),
                      "only these sources read files by glob");
}

DataKey NumClassesKey() {
  return config::Only(config::Int<D>("num_classes", &D::num_classes, 1,
                                     "Labels are in [0, num_classes); tfrecord and synthetic "
                                     "need it; text with text_labels = \"file\" takes "
                                     "the number of files."),
                      "the other sources know their classes");
}

DataKey ImageShapeKey() {
  return config::Only(
      config::WithCheck(
          config::IntList<D>("features.image.shape", {&D::image, &F::shape}, 1,
                             "One example's input shape, [height, width, channels] for an "
                             "image (synthetic examples have it too)."),
          [](const config::ConfigValue& v) -> std::string {
            return std::get<std::vector<int64_t>>(v).empty() ? "must not be empty, got []" : "";
          }),
      "only these sources take the shape from the config");
}

Status NeedNumClasses(const DataSourceSpec& spec) {
  if (spec.num_classes != 0) return Status::OK();
  return InvalidArgumentError("num_classes: the " + spec.source +
                              " source needs it: set it to the number of classes (labels are "
                              "in [0, num_classes))");
}

}  // namespace troupe::input
