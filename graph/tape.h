// GradientTape: records the ops applied to watched values (eagerly, or while tracing into the
// graph the tape was opened in) and computes gradients by reverse accumulation. Gradient
// functions emit ordinary ops, so gradients of traced code become part of the traced graph.
// Trainable variables read under the tape are watched automatically, as in TF.
#pragma once

#include <memory>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/result.h"
#include "graph/value.h"
#include "graph/variable.h"

namespace troupe {

class FuncGraph;

enum class UnconnectedGradients { kNone, kZero };

class GradientTape {
 public:
  explicit GradientTape(bool persistent = false, bool watch_accessed_variables = true);
  ~GradientTape();
  GradientTape(const GradientTape&) = delete;
  GradientTape& operator=(const GradientTape&) = delete;

  void Watch(const Value& value);
  void Watch(const Variable& variable);

  // d(sum(target))/d(source) for each source (with `output_gradient` as the seed when given).
  // Sources that the target does not depend on get an undefined Value (kNone) or zeros.
  // Errors name the node whose gradient is missing and its specs.
  Result<std::vector<Value>> Gradient(
      const Value& target, const std::vector<Value>& sources,
      const Value& output_gradient = Value(),
      UnconnectedGradients unconnected = UnconnectedGradients::kNone);
  Result<std::vector<Value>> Gradient(
      const Value& target, const std::vector<Variable>& sources,
      UnconnectedGradients unconnected = UnconnectedGradients::kNone);
  // Several targets: gradients of their sum.
  Result<std::vector<Value>> Gradient(const std::vector<Value>& targets,
                                      const std::vector<Value>& sources,
                                      const std::vector<Value>& output_gradients,
                                      UnconnectedGradients unconnected);

  // Variables the tape watched (explicitly or by reading them), in first-read order.
  std::vector<Variable> watched_variables() const;

  // Internal: called by the dispatcher.
  bool Tracks(const Value& v) const { return tracked_.count(v.id()) > 0; }
  bool RecordsIn(const FuncGraph* graph) const { return graph == graph_ && recording_; }
  void Record(std::shared_ptr<OpCall> call);
  void NoteVariableRead(const Variable& variable, const Value& read);

  // RAII: pauses recording on `tape` (tf.GradientTape.stop_recording).
  class StopRecording {
   public:
    explicit StopRecording(GradientTape& tape) : tape_(tape), was_(tape.recording_) {
      tape_.recording_ = false;
    }
    ~StopRecording() { tape_.recording_ = was_; }

   private:
    GradientTape& tape_;
    bool was_;
  };

 private:
  // Reverse accumulation from `targets` to the values with `source_ids`; (*grads)[id] holds
  // the gradient contributions per value id.
  Status Backprop(const std::vector<Value>& targets, const std::vector<Value>& output_gradients,
                  const std::vector<int64_t>& source_ids,
                  std::unordered_map<int64_t, std::vector<Value>>* grads);

  FuncGraph* graph_;  // the graph the tape was opened in; null for eager
  bool persistent_;
  bool watch_accessed_variables_;
  bool recording_ = true;
  bool used_ = false;
  std::unordered_set<int64_t> tracked_;
  std::vector<std::shared_ptr<OpCall>> entries_;
  std::unordered_map<int64_t, Variable> variable_reads_;  // read value id -> variable
  std::vector<Variable> watched_vars_;
  std::unordered_set<int64_t> watched_var_ids_;
};

namespace internal {
// Number of live tapes on this thread (the dispatcher's fast check).
int ActiveTapeCount();
// Offers an op application to every tape of the current graph that tracks an input.
void RecordOnTapes(std::string_view op, const AttrMap& attrs,
                   const std::shared_ptr<GraphOp>& graph_op, const std::vector<Value>& inputs,
                   const std::vector<Value>& outputs);
void NoteVariableReadOnTapes(const Variable& variable, const Value& read);
}  // namespace internal

}  // namespace troupe
