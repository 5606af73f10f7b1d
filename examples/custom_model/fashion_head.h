// A data source of the example's own, "fashion_head": the first `examples` training examples of
// Fashion-MNIST (the test split stays whole), for quick runs on a slice of the data. It declares
// its one key through the data source registry, relative to [data]: the config takes it as
// data.examples, only with data.source = "fashion_head", and `custom_model config keys` lists it.
#pragma once

#include "core/status.h"

// Registers the source; call before handing the command line to troupe::launch::Main.
troupe::Status RegisterFashionHead();
