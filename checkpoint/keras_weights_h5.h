// Reads the weights file Keras 3 writes (`model.save_weights("m.weights.h5")`, and the
// `model.weights.h5` member of a `.keras` archive) through the HDF5 library (libhdf5, C API).
//
// Keras' layout (keras/src/saving/saving_lib.py, H5IOStore): every saveable object is an HDF5
// group holding a `vars` group whose datasets "0", "1", ... are its own variables in the order
// its save_own_variables() stores them (a layer: trainable, then non-trainable, each in creation
// order; so Dense: kernel, bias; BatchNormalization: gamma, beta, moving_mean,
// moving_variance). A model's layers are `layers/<key>` where <key> is the layer's class in
// snake case, numbered by order within the class (`dense`, `dense_1`, ...), not its name; Keras
// 3.15 records the name as the `name` attribute of the `vars` group. A layer's sublayers sit
// under the attribute that holds them (MultiHeadAttention: `query_dense/vars/0`, ...), a nested
// model's layers under `layers/<key>/layers/...`, the optimizer's variables at
// `optimizer/vars/<i>` and the model's own (none) at `vars`.
//
// Contract:
// - The whole file is read: every dataset becomes a host Tensor under its full path
//   ("layers/dense/vars/0"), every `vars` group's `name` attribute an entry of `names` under
//   the path of the object that owns it ("layers/dense" -> "dense_x"; "" for the root).
// - Datasets of float32/float64 and signed or unsigned 8..64-bit integers are read (converted
//   to host byte order by HDF5); any other type is Unimplemented naming the dataset.
// - A path that does not exist is NotFound; bytes that are not an HDF5 file, or a damaged one,
//   are DataLoss naming `label` (the path, or "m.keras:model.weights.h5" for an image).
// - HDF5's own error printing is suppressed while reading; its messages are not passed on.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "core/result.h"
#include "core/tensor.h"

namespace troupe::ckpt {

struct KerasWeightsH5 {
  std::map<std::string, Tensor> tensors;     // "layers/dense/vars/0" -> value
  std::map<std::string, std::string> names;  // "layers/dense" -> its `vars` group's name
};

// Reads the HDF5 file at `path`.
Result<KerasWeightsH5> ReadKerasWeightsH5(const std::string& path);

// Reads an HDF5 file image held in memory (opened in memory, no temporary file); `label` names
// it in errors.
Result<KerasWeightsH5> ReadKerasWeightsH5Image(std::string_view image, const std::string& label);

}  // namespace troupe::ckpt
