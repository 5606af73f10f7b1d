// Module: a named container of variables and child modules, like tf.Module / Swift's Layer
// structs. Variable paths join the module names below the root with '/', so a LeNet's first
// convolution owns "conv1/filter" and "conv1/bias" — the names a checkpoint stores them under
// (NamedVariables() is what a checkpoint writer enumerates).
//
// Layer: a Module applied to one input. Layers create their variables on their first call,
// from the input's shape (Keras' build), so inside a Function they are created by the first
// trace only; call Build() to create them ahead of time.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "core/result.h"
#include "graph/value.h"
#include "graph/variable.h"

namespace troupe::nn {

class Module {
 public:
  explicit Module(std::string name) : name_(std::move(name)) {}
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  const std::string& name() const { return name_; }
  // "conv1/" for a child of the root, "" for the root.
  std::string PathPrefix() const;

  // (path, variable) for this module's variables, then its children's, in registration
  // order.
  std::vector<std::pair<std::string, Variable>> NamedVariables() const;
  std::vector<Variable> Variables() const;
  std::vector<Variable> TrainableVariables() const;
  std::vector<std::pair<std::string, Module*>> Children() const { return children_; }

 protected:
  // Makes `child` (a member of the derived class) a child under its own name.
  void AddModule(Module* child);
  // Creates a variable named PathPrefix() + name, initialized eagerly by `init`.
  Result<Variable> AddVariable(const std::string& name, const std::function<Value()>& init,
                               bool trainable = true);

 private:
  std::string name_;
  Module* parent_ = nullptr;
  std::vector<std::pair<std::string, Module*>> children_;
  std::vector<std::pair<std::string, Variable>> variables_;
};

class Layer : public Module {
 public:
  using Module::Module;
  // Builds on the first call, then applies the layer. Errors come back as error Values.
  Value operator()(const Value& x, bool training = false);
  // Creates the variables for inputs of `input_shape` (batch dim may be unknown).
  Status Build(const TensorShape& input_shape);
  bool built() const { return built_; }

 protected:
  virtual Status BuildImpl(const TensorShape& input_shape) { return Status::OK(); }
  virtual Value Call(const Value& x, bool training) = 0;

 private:
  bool built_ = false;
};

}  // namespace troupe::nn
