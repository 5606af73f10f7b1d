// Function: the tf.function counterpart. It wraps a C++ callable that builds with Values; the
// first call with a new signature traces the callable into a graph (a ConcreteFunction), later
// calls with a matching signature run that graph without calling the callable again.
//
// The signature (trace cache key), as the tf.function guide describes it:
//   - tensors: dtype and shape (a trace whose specs have unknown dims serves every compatible
//     shape);
//   - ints, floats, bools, strings: their values (a new value retraces);
//   - Variables: their identity; other objects (Arg::Object): their address;
//   - lists: flattened, element by element.
// `input_signature` fixes the specs up front (one trace; incompatible calls are an error);
// `reduce_retracing` relaxes shapes to unknown dims on the second trace. Host code in the
// callable (logging, counters) runs only while tracing; graph ops (Print, Assign) run on every
// call. Variables may be created only by the first trace.
#pragma once

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/result.h"
#include "core/tensor.h"
#include "core/tensor_spec.h"
#include "graph/executor.h"
#include "graph/func_graph.h"
#include "graph/value.h"
#include "graph/variable.h"

namespace troupe {

// One argument of a Function call.
class Arg {
 public:
  enum class Kind {
    kNone,
    kTensor,
    kSpec,
    kInt,
    kFloat,
    kBool,
    kString,
    kVariable,
    kObject,
    kList
  };

  Arg() = default;
  Arg(Tensor t) : kind_(Kind::kTensor), value_(std::move(t)) {}     // NOLINT(runtime/explicit)
  Arg(Value v) : kind_(Kind::kTensor), value_(std::move(v)) {}      // NOLINT(runtime/explicit)
  Arg(TensorSpec s) : kind_(Kind::kSpec), spec_(std::move(s)) {}    // NOLINT(runtime/explicit)
  Arg(int v) : kind_(Kind::kInt), int_(v) {}                        // NOLINT(runtime/explicit)
  Arg(int64_t v) : kind_(Kind::kInt), int_(v) {}                    // NOLINT(runtime/explicit)
  Arg(double v) : kind_(Kind::kFloat), float_(v) {}                 // NOLINT(runtime/explicit)
  Arg(bool v) : kind_(Kind::kBool), int_(v) {}                      // NOLINT(runtime/explicit)
  Arg(const char* s) : kind_(Kind::kString), str_(s) {}             // NOLINT(runtime/explicit)
  Arg(std::string s) : kind_(Kind::kString), str_(std::move(s)) {}  // NOLINT
  Arg(Variable v) : kind_(Kind::kVariable), var_(std::move(v)) {}   // NOLINT
  Arg(std::vector<Arg> list) : kind_(Kind::kList), list_(std::move(list)) {}  // NOLINT
  // Keyed by address: mutating the object does not retrace (the guide's caveat).
  static Arg Object(const void* identity, std::string type_name = "object");

  Kind kind() const { return kind_; }
  bool is_tensor() const { return kind_ == Kind::kTensor || kind_ == Kind::kSpec; }
  // A tensor argument (inside the callable: the placeholder); a Variable reads itself.
  Value value() const;
  operator Value() const { return value(); }  // NOLINT(runtime/explicit)
  const TensorSpec& tensor_spec() const { return spec_; }
  int64_t int_value() const { return int_; }
  double float_value() const { return kind_ == Kind::kInt ? static_cast<double>(int_) : float_; }
  bool bool_value() const { return int_ != 0; }
  const std::string& str() const { return str_; }
  const Variable& variable() const { return var_; }
  const void* object() const { return object_; }
  const std::vector<Arg>& list() const { return list_; }

  // The spec of a tensor argument (from the tensor, or the TensorSpec itself).
  TensorSpec spec() const;
  // Python-style description used in errors: "int value 2", "float32 Tensor, shape=(2,)".
  std::string Describe() const;
  // Same value for non-tensor kinds (the cache's notion of equality).
  bool SameStatic(const Arg& other) const;

 private:
  friend class Function;
  friend class ConcreteFunction;
  Kind kind_ = Kind::kNone;
  Value value_;
  TensorSpec spec_;
  int64_t int_ = 0;
  double float_ = 0;
  std::string str_;
  Variable var_;
  const void* object_ = nullptr;
  std::vector<Arg> list_;
};

using Kwargs = std::vector<std::pair<std::string, Arg>>;

// The arguments the callable receives, by position or by parameter name.
class Args {
 public:
  Args(std::vector<Arg> args, const std::vector<std::string>* names)
      : args_(std::move(args)), names_(names) {}
  size_t size() const { return args_.size(); }
  const Arg& operator[](size_t i) const { return args_[i]; }
  const Arg& operator[](std::string_view name) const;
  const std::vector<Arg>& all() const { return args_; }

 private:
  std::vector<Arg> args_;
  const std::vector<std::string>* names_;
};

// What the callable returns: values (possibly none) or an error.
class Outputs {
 public:
  Outputs() = default;
  Outputs(Value v) : values_{std::move(v)} {}               // NOLINT
  Outputs(const Arg& a) : values_{a.value()} {}             // NOLINT
  Outputs(std::vector<Value> v) : values_(std::move(v)) {}  // NOLINT
  Outputs(std::initializer_list<Value> v) : values_(v) {}   // NOLINT
  Outputs(Status s) : status_(std::move(s)) {}              // NOLINT
  const std::vector<Value>& values() const { return values_; }
  const Status& status() const { return status_; }

 private:
  std::vector<Value> values_;
  Status status_;
};

using FunctionBody = std::function<Outputs(const Args&)>;

struct FunctionOptions {
  // Parameter names (keyword calls, printed signatures, placeholder names). Missing names
  // default to a0, a1, ...
  std::vector<std::string> params;
  std::optional<std::vector<TensorSpec>> input_signature;
  bool reduce_retracing = false;
  Device device = Device::Cpu();
};

class ConcreteFunction {
 public:
  struct Param {
    std::string name;
    // What it was traced with: tensors as their traced TensorSpec (kSpec), other values as
    // given (lists keep their structure).
    Arg traced;
  };

  const std::string& name() const { return name_; }  // "__inference_double_3"
  const std::string& function_name() const { return function_name_; }
  const FuncGraph& graph() const { return *graph_; }
  const std::shared_ptr<FuncGraph>& graph_ptr() const { return graph_; }
  const std::vector<Param>& params() const { return params_; }
  // The tensor parameters' specs, named after the parameters.
  std::vector<TensorSpec> input_specs() const;
  std::vector<TensorSpec> output_specs() const { return graph_->OutputSpecs(); }

  // Runs with concrete tensors (positional or keyword). Tensors must match the specs; other
  // arguments must equal the values it was traced with (omitted ones default to them).
  Result<std::vector<Tensor>> Run(const std::vector<Arg>& args, const Kwargs& kwargs = {});
  // Works in any context: eager (runs), while tracing (inlines the graph).
  Result<std::vector<Value>> Call(const std::vector<Arg>& args, const Kwargs& kwargs = {});
  // Runs on the tensor parameters in order, after checking them against the specs.
  // `on_ready` hears each output as soon as it is made (Executor::OutputReadyFn).
  Result<std::vector<Tensor>> RunFlat(std::span<const Tensor> inputs,
                                      const Executor::OutputReadyFn& on_ready = nullptr);

  // "double(a)\n  Args:\n    a: string Tensor, shape=()\n  Returns:\n    string Tensor, shape=()"
  std::string SignatureString() const;
  std::string ToString() const { return "ConcreteFunction " + SignatureString(); }
  ExecutorStats stats() const;

 private:
  friend class Function;
  ConcreteFunction() = default;
  Result<std::vector<Value>> CallBound(const std::vector<Arg>& bound);
  Status CheckInput(int index, const TensorSpec& got) const;
  // Matches call arguments against the parameters; collects the tensor arguments in input
  // order (a Value per graph input).
  Status Bind(const std::vector<Arg>& args, const Kwargs& kwargs, std::vector<Value>* inputs) const;
  Status Match(const Param& p, const Arg& traced, const Arg& given,
               std::vector<Value>* inputs) const;
  Result<std::vector<Value>> CallInputs(std::vector<Value> inputs);
  Result<Executor*> GetExecutor();

  std::string name_;
  std::string function_name_;
  std::shared_ptr<FuncGraph> graph_;
  std::vector<Param> params_;
  std::vector<TensorSpec> specs_;  // per graph input
  std::string param_list_;         // "a, b"
  std::mutex mu_;
  std::unique_ptr<Executor> executor_;
  Device device_;
};

class Function {
 public:
  Function(std::string name, FunctionBody body, FunctionOptions options = {});

  // Traces when needed, then runs (eager) or inlines the trace (while tracing another
  // Function). Errors: signature mismatches, trace errors, run errors.
  Result<std::vector<Value>> Call(const std::vector<Arg>& args, const Kwargs& kwargs = {});
  // Eager convenience: the output tensors.
  Result<std::vector<Tensor>> Run(const std::vector<Arg>& args, const Kwargs& kwargs = {});
  Result<Tensor> Run1(const std::vector<Arg>& args, const Kwargs& kwargs = {});
  // Builder convenience: the first output as a Value (an error Value on failure).
  Value operator()(const std::vector<Arg>& args, const Kwargs& kwargs = {});

  // Traces (if needed) without running. Arguments may be TensorSpecs.
  Result<std::shared_ptr<ConcreteFunction>> GetConcreteFunction(const std::vector<Arg>& args,
                                                                const Kwargs& kwargs = {});

  const std::string& name() const { return name_; }
  // Times the callable ran to trace (a first trace that creates variables counts twice, as in
  // TF, which traces such a function again to check that it creates no more).
  int trace_count() const;
  int num_concrete_functions() const;
  std::vector<std::shared_ptr<ConcreteFunction>> concrete_functions() const;
  // Every concrete function's SignatureString(), in trace order, blank-line separated.
  std::string PrettyPrintedConcreteSignatures() const;

 private:
  struct Trace {
    std::vector<Arg> key_args;  // tensor args as kSpec (the traced specs), others as given
    std::shared_ptr<ConcreteFunction> fn;
  };
  Result<std::vector<Arg>> Bind(const std::vector<Arg>& args, const Kwargs& kwargs) const;
  Result<std::shared_ptr<ConcreteFunction>> Lookup(const std::vector<Arg>& bound, bool count_call);
  Result<std::shared_ptr<ConcreteFunction>> TraceNew(const std::vector<Arg>& key_args);
  Result<std::shared_ptr<ConcreteFunction>> TraceOnce(const std::vector<Arg>& key_args,
                                                      bool allow_variables, int* created);
  Result<std::vector<Value>> RunEagerly(const std::vector<Arg>& bound);

  std::string name_;
  FunctionBody body_;
  FunctionOptions options_;
  mutable std::recursive_mutex mu_;
  std::unordered_map<std::string, std::shared_ptr<ConcreteFunction>> exact_;
  std::vector<Trace> traces_;
  std::vector<std::string> tracing_now_;  // keys being traced (recursion check)
  bool first_trace_done_ = false;
  int trace_count_ = 0;
  int64_t calls_ = 0;
};

// tf.config.run_functions_eagerly: when true, Functions call their callable eagerly.
void RunFunctionsEagerly(bool enable);
bool FunctionsRunEagerly();

}  // namespace troupe
