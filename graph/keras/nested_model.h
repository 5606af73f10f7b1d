// A Keras model used as a layer of another: the Sequential stem and downsampling blocks of
// keras.applications.ConvNeXt*, or any Sequential/Functional model a user calls on a tensor,
// at any depth (internal to graph/keras).
//
// Contract:
// - Make() loads the envelope's config as a KerasModel (model_json.h; every refusal is that
//   loader's, naming the nested model) with one input and one output; Apply runs it on the one
//   input tensor. The inner InputLayer's null dimensions take the shape of that tensor.
// - Its variables are named "<nested model>/<layer>/<weight>", and KerasWeights() lays them out
//   as Keras' checkpoint does: the inner layer k (1-based, in the inner model's Keras order;
//   0 is its InputLayer) under "_operations/k/..." for a Functional model and
//   "_functional/_operations/k/..." for a Sequential one.
// - Weight penalties of the inner layers are the nested layer's penalties.
#pragma once

#include <memory>

#include <nlohmann/json.hpp>

#include "core/result.h"
#include "graph/keras/layer_factory.h"

namespace troupe::keras {

class KerasModel;

// True for an envelope whose class is a Keras model (Sequential, Functional, Model).
bool IsNestedModel(const nlohmann::json& envelope);

Result<std::unique_ptr<KerasLayer>> MakeNestedModelLayer(const nlohmann::json& envelope,
                                                         int64_t seed);

}  // namespace troupe::keras
