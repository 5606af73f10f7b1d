// The config tests parse data.source = "tfrecord" and "synthetic", which the parser accepts
// only when they are registered. Where this build's input/ does not register them yet, they are
// registered here as stand-ins that refuse to open; where it does, the real ones stay.
#include "input/data_source.h"

namespace {

[[maybe_unused]] const bool kStubsRegistered = [] {
  for (const char* name : {"tfrecord", "synthetic"}) {
    (void)troupe::input::RegisterDataSource(
        name,
        [name](const troupe::input::DataSourceSpec&, troupe::input::DataSplit,
               const troupe::input::InputContext&) -> troupe::Result<troupe::input::SourceData> {
          return troupe::UnimplementedError(std::string(name) + ": a test stand-in");
        });
  }
  return true;
}();

}  // namespace
