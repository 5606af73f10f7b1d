#include "fashion_head.h"

#include <cstdint>

#include "core/config_key.h"
#include "input/data_source.h"

namespace {

using namespace troupe;  // NOLINT: example brevity

// data.examples: an integer >= 1; 60000 (all of them) when the config leaves it out.
const input::DataKey& Examples() {
  static const auto* key = new input::DataKey([] {
    input::DataKey k = config::Option<input::DataSourceSpec>(
        "examples", config::ConfigType::kInt, int64_t{60000},
        "fashion_head: train on the first N of Fashion-MNIST's 60000 training examples.");
    k.min = 1;
    return config::Only(std::move(k), "only fashion_head takes a slice of the examples");
  }());
  return *key;
}

// Fashion-MNIST as the built-in source opens it, its training split cut to the first N.
Result<input::SourceData> OpenFashionHead(const input::DataSourceSpec& spec, input::DataSplit split,
                                          const input::InputContext& context) {
  input::DataSourceSpec fashion = spec;
  fashion.source = "fashion_mnist";
  TROUPE_ASSIGN_OR_RETURN(input::SourceData data, input::OpenDataSource(fashion, split, context));
  if (split == input::DataSplit::kTrain) {
    data.examples = data.examples.Take(config::ValueOf<int64_t>(Examples(), spec));
  }
  return data;
}

}  // namespace

Status RegisterFashionHead() {
  TROUPE_ASSIGN_OR_RETURN(input::DataSource fashion, input::FindDataSource("fashion_mnist"));
  input::DataSource head;
  head.open = OpenFashionHead;
  head.keys = {Examples()};
  head.check_files = fashion.check_files;  // the same IDX files in data.dir
  return input::RegisterDataSource("fashion_head", head);
}
