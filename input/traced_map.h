// Map functions from graph/: a traced Function used as a dataset map function, as tf.data traces
// `map(f)` once with the element spec and then runs the graph per element. Lives in the
// troupe_input_graph target (input + graph) so troupe_input itself stays graph-free.
#pragma once

#include <memory>

#include "graph/function.h"
#include "input/dataset.h"

namespace troupe::input {

// The Function receives one tensor argument per element component and returns the new
// components. It is traced when the dataset is built (with the input element spec, unknown
// dims included), so shape errors show up at Map() time, not mid-epoch.
MapFunctionPtr TracedFunction(std::shared_ptr<Function> fn);

}  // namespace troupe::input
