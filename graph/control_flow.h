// Control flow that stays in the graph (what AutoGraph makes of a tensor `if` or `while`):
//
//   Cond(pred, true_fn, false_fn): eagerly, runs the branch `pred` picks. While tracing, traces
//   BOTH branches into subgraphs (their host code runs once each, as the guide's fizzbuzz shows)
//   and adds an If node that picks one at run time. The branches' outputs must agree in count,
//   dtype and shape (unknown dims are compatible with anything).
//
//   WhileLoop(cond, body, loop_vars): eagerly, a host loop. While tracing, traces cond and body
//   once into subgraphs and adds a While node that decides the iteration count at run time.
//   Loop variables keep their dtype and shape across iterations unless a shape invariant with
//   unknown dims allows the shape to change.
//
// Branches and bodies may use tensors of the enclosing graph (they are captured as extra
// inputs). Both have gradients: the If gradient is an If over the branches' gradients; the
// While gradient runs the body's gradient backwards over the iterations the forward loop
// recorded.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/result.h"
#include "graph/function.h"
#include "graph/value.h"

namespace troupe {

using BranchFn = std::function<Outputs()>;
Result<std::vector<Value>> Cond(const Value& pred, const BranchFn& true_fn,
                                const BranchFn& false_fn, const std::string& name = "cond");

using LoopCondFn = std::function<Value(const std::vector<Value>& vars)>;
using LoopBodyFn = std::function<Outputs(const std::vector<Value>& vars)>;

struct WhileOptions {
  // Stop after this many iterations even if cond still holds (-1: no limit).
  int64_t maximum_iterations = -1;
  // Per loop variable: the shape it may have across iterations (empty: its initial shape).
  std::vector<TensorShape> shape_invariants;
  std::string name = "while";
};

Result<std::vector<Value>> WhileLoop(const LoopCondFn& cond, const LoopBodyFn& body,
                                     const std::vector<Value>& loop_vars,
                                     const WhileOptions& options = {});

// `for i in tf.range(start, limit)`: body(i, vars) -> new vars, with i an int32 scalar.
using ForBodyFn = std::function<Outputs(const Value& i, const std::vector<Value>& vars)>;
Result<std::vector<Value>> ForRange(const Value& start, const Value& limit, const ForBodyFn& body,
                                    const std::vector<Value>& loop_vars = {},
                                    const std::string& name = "for");

// `for row in x` (rows along dim 0, counted at run time): body(row, vars) -> new vars.
using ForEachRowFn = std::function<Outputs(const Value& row, const std::vector<Value>& vars)>;
Result<std::vector<Value>> ForEachRow(const Value& x, const ForEachRowFn& body,
                                      const std::vector<Value>& loop_vars = {},
                                      const std::string& name = "for_each");

}  // namespace troupe
