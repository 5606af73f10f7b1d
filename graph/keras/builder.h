// Writes Keras 3 Functional model JSON from C++: the zoo's models are defined with it, so each
// is a Keras model (keras.models.model_from_json reads it) and a starting point a user can
// edit. Layers are named as Keras names them (snake_case of the class, then _1, _2, ...), and
// configs hold only the options that differ from Keras' defaults.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace troupe::keras {

class FunctionalBuilder {
 public:
  // A layer call's output.
  struct Tensor {
    std::string layer;
    int64_t node = 0;
  };

  explicit FunctionalBuilder(std::string model_name) : name_(std::move(model_name)) {}

  // keras.Input(shape, dtype).
  Tensor Input(const std::vector<int64_t>& shape, const std::string& dtype = "float32");
  // A keras.layers.<class_name>(**config) called on `inputs` (a merge layer gets them as one
  // list), with call keyword arguments `kwargs`.
  Tensor Layer(const std::string& class_name, nlohmann::json config,
               const std::vector<Tensor>& inputs, nlohmann::json kwargs = nlohmann::json::object());
  // The model from the input to `output`.
  nlohmann::json Build(const Tensor& output) const;

 private:
  std::string UniqueName(const std::string& class_name);

  std::string name_;
  std::string input_;
  std::map<std::string, int> name_counts_;
  nlohmann::json layers_ = nlohmann::json::array();
};

// Keras' initializer / regularizer envelopes.
nlohmann::json KerasInitializer(const std::string& class_name,
                                nlohmann::json config = nlohmann::json::object());
nlohmann::json KerasL2(double l2);

}  // namespace troupe::keras
