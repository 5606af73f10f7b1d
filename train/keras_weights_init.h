// A model's initial weights from Keras' HDF5 weights: a `.weights.h5` file
// (model.save_weights) or the `model.weights.h5` member of a `.keras` archive (model.save),
// read through checkpoint/keras_weights_h5.h and mapped onto nn::Model::KerasLayers().
//
// Contract:
// - Layers are found by name: the model's layer L is the file's `layers/<key>` whose `vars`
//   group records the name L (Keras 3.15 writes it), else the `layers/<key>` with key L when
//   the file records no names. When no layer is found so, and `keras_keys` are given, Keras'
//   own load_weights rule applies instead: layer i is `layers/<keras_keys[i]>`, the
//   snake-cased class numbered by order within the class (KerasH5Keys), so a file written by
//   an instance of the same model whose layers Keras named otherwise loads as in Keras. Within
//   a layer, KerasLayers()'
//   weights are taken in order per owner: the layer's own weights ("_kernel", "bias") are `vars/0`,
//   `vars/1`, ...; a sublayer's ("_query_dense/_kernel") are under that sublayer's group
//   ("query_dense/vars/0"), found with or without the attribute's leading underscore.
//   BatchNormalization's moving mean and variance are its vars 2 and 3, as Keras stores them.
// - All or nothing: every matched weight is checked (dtype and shape) before any is assigned; a
//   mismatch is InvalidArgument naming the layer, the weight, the file's dataset and both
//   shapes. A file none of whose layer weights fit the model is InvalidArgument saying it was
//   written for another model, with both models' layer names.
// - Model weights the file lacks keep their values and are listed, as are the file's layer
//   weights the model does not use; the optimizer's variables (`optimizer/vars/*`) are not
//   read into the model and not listed.
#pragma once

#include <string>
#include <vector>

#include "checkpoint/keras_weights_h5.h"
#include "core/result.h"
#include "graph/nn/model.h"

namespace troupe::train {

struct KerasWeightsRestore {
  int restored = 0;
  bool by_class_and_position = false;  // Keras' rule, not the names (see above)
  std::vector<std::string> missing;    // "<layer>/<weight>" the file lacks
  std::vector<std::string> unused;     // the file's "layers/..." datasets no model weight took
};

// True for the paths model.init_from reads as Keras weights (".keras", ".h5") rather than as a
// TF checkpoint.
bool IsKerasWeightsPath(const std::string& path);

// Reads a .keras archive's model.weights.h5 (opened in memory) or a .weights.h5 file. NotFound
// when the file does not exist, or a .keras archive holds no weights.
Result<ckpt::KerasWeightsH5> ReadKerasWeightsFile(const std::string& path);

// Keras' key (`layers/<key>` in a weights file) for each of model.KerasLayers(), in that
// order, as Keras' saving_lib computes it: to_snake_case(class name) with `_1`, `_2`, ... for
// later layers of the same class; "" for an op-layer (`x + y`: an Operation, not a Layer, so
// not in the file). Empty when `model` is not a Keras JSON model (its layers have no Keras
// classes).
std::vector<std::string> KerasH5Keys(const nn::Model& model);

// Assigns `file`'s weights to `layers`' variables (see the contract above); `label` names the
// file in errors; `keras_keys` (KerasH5Keys, or empty) the fallback for files named otherwise.
Result<KerasWeightsRestore> RestoreKerasWeights(const std::vector<nn::KerasLayer>& layers,
                                                const ckpt::KerasWeightsH5& file,
                                                const std::string& label,
                                                const std::vector<std::string>& keras_keys = {});

}  // namespace troupe::train
