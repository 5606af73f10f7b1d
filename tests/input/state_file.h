// A small binary file format for iterator state, so the input tests can stop a pipeline in
// one process and resume it in another without depending on checkpoint/. (Training stores the
// same (name, Tensor) pairs in TF checkpoints through checkpoint/'s BundleWriter.)
#pragma once

#include <string>

#include "input/dataset.h"

namespace troupe::input::testing {

Status WriteStateFile(const std::string& path, const IteratorState& state);
Result<IteratorState> ReadStateFile(const std::string& path);

}  // namespace troupe::input::testing
