// A model's initial weights from Keras' HDF5 weights: a `.weights.h5` file
// (model.save_weights) or the `model.weights.h5` member of a `.keras` archive (model.save),
// read through checkpoint/keras_weights_h5.h and mapped onto nn::Model::KerasLayers().
//
// Contract:
// - Layers are found by name: the model's layer L is the file's `layers/<key>` whose `vars`
//   group records the name L (Keras 3.15 writes it), else the `layers/<key>` with key L when
//   the file records no names. (Keras' own load_weights goes by class and position instead,
//   so it also loads a file whose layers were named otherwise; here such a layer's weights are
//   listed as missing, or the file refused as another model's.) Within a layer, KerasLayers()'
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

namespace troupe::actors {

struct KerasWeightsRestore {
  int restored = 0;
  std::vector<std::string> missing;  // "<layer>/<weight>" the file lacks
  std::vector<std::string> unused;   // the file's "layers/..." datasets no model weight took
};

// True for the paths model.init_from reads as Keras weights (".keras", ".h5") rather than as a
// TF checkpoint.
bool IsKerasWeightsPath(const std::string& path);

// Reads a .keras archive's model.weights.h5 (opened in memory) or a .weights.h5 file. NotFound
// when the file does not exist, or a .keras archive holds no weights.
Result<ckpt::KerasWeightsH5> ReadKerasWeightsFile(const std::string& path);

// Assigns `file`'s weights to `layers`' variables (see the contract above); `label` names the
// file in errors.
Result<KerasWeightsRestore> RestoreKerasWeights(const std::vector<nn::KerasLayer>& layers,
                                                const ckpt::KerasWeightsH5& file,
                                                const std::string& label);

}  // namespace troupe::actors
