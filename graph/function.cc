#include "graph/function.h"

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "core/logging.h"
#include "graph/function_internal.h"
#include "graph/tape.h"
#include "graph/tracing_device.h"

namespace troupe {
namespace {

using internal::IsSubtype;

std::atomic<bool> g_run_eagerly{false};
std::atomic<int64_t> g_concrete_counter{0};

void AppendKey(const Arg& a, std::string* key) {
  switch (a.kind()) {
    case Arg::Kind::kNone:
      *key += "n;";
      return;
    case Arg::Kind::kTensor:
    case Arg::Kind::kSpec: {
      TensorSpec s = a.spec();
      *key += "T";
      *key += std::to_string(static_cast<int>(s.dtype));
      if (s.shape.unknown_rank()) {
        *key += "*";
      } else {
        for (int64_t d : s.shape.dims()) *key += "," + std::to_string(d);
      }
      *key += ";";
      return;
    }
    case Arg::Kind::kInt:
      *key += "i" + std::to_string(a.int_value()) + ";";
      return;
    case Arg::Kind::kFloat: {
      double f = a.float_value();
      uint64_t bits;
      std::memcpy(&bits, &f, sizeof bits);
      *key += "f" + std::to_string(bits) + ";";
      return;
    }
    case Arg::Kind::kBool:
      *key += a.bool_value() ? "b1;" : "b0;";
      return;
    case Arg::Kind::kString:
      *key += "s" + std::to_string(a.str().size()) + ":" + a.str() + ";";
      return;
    case Arg::Kind::kVariable:
      *key += "v" + std::to_string(a.variable().valid() ? a.variable().id() : 0) + ";";
      return;
    case Arg::Kind::kObject:
      *key += "o" + std::to_string(reinterpret_cast<uintptr_t>(a.object())) + ";";
      return;
    case Arg::Kind::kList:
      *key += "[";
      for (const Arg& e : a.list()) AppendKey(e, key);
      *key += "];";
      return;
  }
}

std::string KeyOf(const std::vector<Arg>& args) {
  std::string key;
  for (const Arg& a : args) AppendKey(a, &key);
  return key;
}

// Does a call with `given` fit a trace made with `traced`?
bool Fits(const Arg& given, const Arg& traced) {
  if (given.is_tensor() || traced.is_tensor()) {
    return given.is_tensor() && traced.is_tensor() && IsSubtype(given.spec(), traced.spec());
  }
  if (given.kind() == Arg::Kind::kList && traced.kind() == Arg::Kind::kList) {
    if (given.list().size() != traced.list().size()) return false;
    for (size_t i = 0; i < given.list().size(); ++i) {
      if (!Fits(given.list()[i], traced.list()[i])) return false;
    }
    return true;
  }
  return given.SameStatic(traced);
}

// `given` with tensors replaced by their specs (the trace's key arguments).
Arg ToKeyArg(const Arg& a) {
  if (a.is_tensor()) return Arg(a.spec());
  if (a.kind() == Arg::Kind::kList) {
    std::vector<Arg> items;
    for (const Arg& e : a.list()) items.push_back(ToKeyArg(e));
    return Arg(std::move(items));
  }
  return a;
}

// reduce_retracing: `given` relaxed against an earlier trace of the same structure; false when
// the structures (kinds, static values, dtypes) differ.
bool Relax(const Arg& given, const Arg& previous, Arg* out) {
  if (given.is_tensor() && previous.is_tensor()) {
    TensorSpec g = given.spec(), p = previous.spec();
    if (g.dtype != p.dtype) return false;
    *out = Arg(TensorSpec{g.shape.MostSpecificCommonShape(p.shape), g.dtype, ""});
    return true;
  }
  if (given.kind() == Arg::Kind::kList && previous.kind() == Arg::Kind::kList) {
    if (given.list().size() != previous.list().size()) return false;
    std::vector<Arg> items(given.list().size());
    for (size_t i = 0; i < items.size(); ++i) {
      if (!Relax(given.list()[i], previous.list()[i], &items[i])) return false;
    }
    *out = Arg(std::move(items));
    return true;
  }
  if (!given.SameStatic(previous)) return false;
  *out = given;
  return true;
}

// Placeholders for the tensors inside `key_arg`, in flattening order.
Arg MakeSymbolic(const Arg& key_arg, const std::string& name, FuncGraph& g) {
  if (key_arg.is_tensor()) return Arg(g.AddInput(key_arg.spec(), name));
  if (key_arg.kind() == Arg::Kind::kList) {
    std::vector<Arg> items;
    for (size_t i = 0; i < key_arg.list().size(); ++i) {
      items.push_back(MakeSymbolic(key_arg.list()[i], name + "_" + std::to_string(i), g));
    }
    return Arg(std::move(items));
  }
  return key_arg;
}

// TF's detector of frequent retracing: warns when 5 of a Function's last 10 calls traced.
// Keyed by name, so that Functions re-created in a loop are caught too.
class RetracingDetector {
 public:
  static RetracingDetector& Get() {
    static RetracingDetector* d = new RetracingDetector();
    return *d;
  }
  void Called(const std::string& name, bool traced) {
    std::lock_guard<std::mutex> lock(mu_);
    State& s = states_[name];
    ++s.calls;
    if (!traced) return;
    s.traced_calls.push_back(s.calls);
    if (s.traced_calls.size() > kThreshold) s.traced_calls.pop_front();
    const int64_t window = s.calls - s.traced_calls.front() + 1;
    if (s.traced_calls.size() >= kThreshold && window <= kHistory) {
      TROUPE_LOG(WARNING)
          << s.traced_calls.size() << " out of the last " << window << " calls to Function '"
          << name << "' triggered retracing. Tracing is expensive and the excessive number of "
          << "tracings could be due to (1) creating a Function repeatedly in a loop, (2) "
          << "passing tensors with different shapes, (3) passing non-tensor values (ints, "
          << "strings, objects) that change from call to call. For (1), define the Function "
          << "once, outside the loop. For (2), use reduce_retracing=true or an "
          << "input_signature with unknown dims. For (3), pass tensors instead.";
    }
  }

 private:
  static constexpr size_t kThreshold = 5;
  static constexpr int64_t kHistory = 10;
  struct State {
    int64_t calls = 0;
    std::deque<int64_t> traced_calls;
  };
  std::mutex mu_;
  std::map<std::string, State> states_;
};

}  // namespace

void RunFunctionsEagerly(bool enable) { g_run_eagerly.store(enable); }
bool FunctionsRunEagerly() { return g_run_eagerly.load(); }

namespace {
thread_local Device t_tracing_device = Device::Cpu();
}  // namespace
Device TracingDevice() { return t_tracing_device; }
bool UseCpuFusedOps() {
  static const bool enabled = [] {
    const char* v = std::getenv("TROUPE_FUSED_OPS");
    return v == nullptr || std::strcmp(v, "0") != 0;
  }();
  return enabled && t_tracing_device.is_cpu();
}

// ------------------------------------------------------------------------------ Function

Function::Function(std::string name, FunctionBody body, FunctionOptions options)
    : name_(std::move(name)), body_(std::move(body)), options_(std::move(options)) {
  size_t n = options_.params.size();
  if (options_.input_signature) n = std::max(n, options_.input_signature->size());
  for (size_t i = options_.params.size(); i < n; ++i) {
    options_.params.push_back("a" + std::to_string(i));
  }
}

int Function::trace_count() const {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  return trace_count_;
}

int Function::num_concrete_functions() const {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  return static_cast<int>(traces_.size());
}

std::vector<std::shared_ptr<ConcreteFunction>> Function::concrete_functions() const {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  std::vector<std::shared_ptr<ConcreteFunction>> out;
  for (const Trace& t : traces_) out.push_back(t.fn);
  return out;
}

std::string Function::PrettyPrintedConcreteSignatures() const {
  std::string out;
  for (const auto& fn : concrete_functions()) {
    if (!out.empty()) out += "\n\n";
    out += fn->SignatureString();
  }
  return out;
}

Result<std::vector<Arg>> Function::Bind(const std::vector<Arg>& args, const Kwargs& kwargs) const {
  std::vector<Arg> bound = args;
  // Extra positional arguments get generated names, so a Function needs no declared params.
  if (bound.size() < options_.params.size()) bound.resize(options_.params.size());
  std::vector<bool> set(bound.size(), false);
  for (size_t i = 0; i < args.size(); ++i) set[i] = true;
  for (const auto& [name, arg] : kwargs) {
    size_t i = 0;
    while (i < options_.params.size() && options_.params[i] != name) ++i;
    if (i == options_.params.size()) {
      return InvalidArgumentError(name_ + "() got an unexpected keyword argument '" + name + "'");
    }
    if (set[i]) {
      return InvalidArgumentError(name_ + "() got multiple values for argument '" + name + "'");
    }
    bound[i] = arg;
    set[i] = true;
  }
  if (options_.input_signature) {
    const auto& sig = *options_.input_signature;
    bool ok = bound.size() == sig.size();
    for (size_t i = 0; ok && i < sig.size(); ++i) {
      ok = bound[i].is_tensor() && IsSubtype(bound[i].spec(), sig[i]);
    }
    if (!ok) {
      std::string in, want;
      for (size_t i = 0; i < bound.size(); ++i)
        in += (i ? ",\n    " : "    ") + bound[i].Describe();
      for (size_t i = 0; i < sig.size(); ++i) {
        TensorSpec s = sig[i];
        want += (i ? ",\n    " : "    ") + s.ToString();
      }
      return InvalidArgumentError("Function '" + name_ +
                                  "': inputs incompatible with input_signature:\n  inputs: (\n" +
                                  in + ")\n  input_signature: (\n" + want + ").");
    }
  }
  return bound;
}

Result<std::shared_ptr<ConcreteFunction>> Function::Lookup(const std::vector<Arg>& bound,
                                                           bool count_call) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  std::vector<Arg> key_args;
  key_args.reserve(bound.size());
  if (options_.input_signature) {
    for (const TensorSpec& s : *options_.input_signature) key_args.emplace_back(s);
  } else {
    for (const Arg& a : bound) key_args.push_back(ToKeyArg(a));
  }
  std::string key = KeyOf(key_args);
  auto it = exact_.find(key);
  if (it != exact_.end()) {
    if (count_call) RetracingDetector::Get().Called(name_, false);
    return it->second;
  }
  // A trace whose specs accept these arguments (unknown dims) serves them too.
  for (const Trace& t : traces_) {
    bool fits = t.key_args.size() == key_args.size();
    for (size_t i = 0; fits && i < key_args.size(); ++i) fits = Fits(key_args[i], t.key_args[i]);
    if (fits) {
      exact_.emplace(key, t.fn);
      if (count_call) RetracingDetector::Get().Called(name_, false);
      return t.fn;
    }
  }
  for (const std::string& k : tracing_now_) {
    if (k == key) {
      return FailedPreconditionError(
          "Function '" + name_ +
          "' called itself recursively with the same signature while "
          "tracing; recursion is not supported in traced functions (it would trace forever). "
          "Use while_loop, or recurse on non-tensor arguments only");
    }
  }
  if (options_.reduce_retracing && !traces_.empty()) {
    for (auto t = traces_.rbegin(); t != traces_.rend(); ++t) {
      if (t->key_args.size() != key_args.size()) continue;
      std::vector<Arg> relaxed(key_args.size());
      bool ok = true;
      for (size_t i = 0; ok && i < key_args.size(); ++i) {
        ok = Relax(key_args[i], t->key_args[i], &relaxed[i]);
      }
      if (ok) {
        key_args = std::move(relaxed);
        break;
      }
    }
  }
  tracing_now_.push_back(key);
  Result<std::shared_ptr<ConcreteFunction>> fn = TraceNew(key_args);
  tracing_now_.pop_back();
  if (count_call) RetracingDetector::Get().Called(name_, true);
  if (!fn.ok()) return fn.status();
  exact_.emplace(key, *fn);
  traces_.push_back(Trace{key_args, *fn});
  return *fn;
}

Result<std::shared_ptr<ConcreteFunction>> Function::TraceNew(const std::vector<Arg>& key_args) {
  const bool first = !first_trace_done_;
  first_trace_done_ = true;
  int created = 0;
  TROUPE_ASSIGN_OR_RETURN(std::shared_ptr<ConcreteFunction> fn,
                          TraceOnce(key_args, /*allow_variables=*/first, &created));
  if (first && created > 0) {
    // As TF does: trace again, now forbidding variable creation, so that a callable that
    // creates variables on every call fails on its first call rather than silently
    // creating new ones each trace.
    TROUPE_ASSIGN_OR_RETURN(fn, TraceOnce(key_args, /*allow_variables=*/false, &created));
  }
  return fn;
}

Result<std::shared_ptr<ConcreteFunction>> Function::TraceOnce(const std::vector<Arg>& key_args,
                                                              bool allow_variables, int* created) {
  ++trace_count_;
  auto graph = std::make_shared<FuncGraph>(name_);
  std::shared_ptr<ConcreteFunction> fn(new ConcreteFunction());
  fn->function_name_ = name_;
  fn->device_ = options_.device;
  fn->name_ = "__inference_" + name_ + "_" + std::to_string(g_concrete_counter.fetch_add(1) + 1);
  std::vector<Arg> symbolic;
  Outputs outputs;
  internal::VariableCreationPolicy policy{allow_variables, name_, 0};
  {
    BuildScope scope(graph);
    internal::VariableCreationPolicy* saved = internal::CurrentVariablePolicy();
    internal::CurrentVariablePolicy() = &policy;
    const Device saved_device = t_tracing_device;
    if (saved_device.is_cpu()) t_tracing_device = options_.device;
    for (size_t i = 0; i < key_args.size(); ++i) {
      const std::string& pname =
          i < options_.params.size() ? options_.params[i] : "a" + std::to_string(i);
      symbolic.push_back(MakeSymbolic(key_args[i], pname, *graph));
      fn->params_.push_back({pname, key_args[i]});
      fn->param_list_ += (i ? ", " : "") + pname;
    }
    Args args(symbolic, &options_.params);
    outputs = body_(args);
    internal::CurrentVariablePolicy() = saved;
    t_tracing_device = saved_device;
    if (outputs.status().ok() && graph->status().ok()) {
      for (const Value& v : outputs.values()) {
        if (!v.defined()) continue;  // a None output
        Value out = Apply1("Identity", {v}, {}, "Identity");
        if (!out.ok()) {
          graph->RecordError(out.status());
          break;
        }
        graph->outputs.push_back(out.node_out());
      }
    }
  }
  *created = policy.created;
  graph->FinishBuilding();
  Status status = outputs.status();
  if (status.ok()) status = graph->status();
  if (status.ok()) status = FirstError(outputs.values());
  if (!status.ok()) return status.WithContext("while tracing Function '" + name_ + "'");
  fn->graph_ = graph;
  fn->specs_ = graph->InputSpecs();
  return fn;
}

Result<std::vector<Value>> Function::RunEagerly(const std::vector<Arg>& bound) {
  Args args(bound, &options_.params);
  Outputs out = body_(args);
  TROUPE_RETURN_IF_ERROR(out.status());
  TROUPE_RETURN_IF_ERROR(FirstError(out.values()));
  return out.values();
}

Result<std::vector<Value>> Function::Call(const std::vector<Arg>& args, const Kwargs& kwargs) {
  TROUPE_ASSIGN_OR_RETURN(std::vector<Arg> bound, Bind(args, kwargs));
  if (FunctionsRunEagerly() && CurrentGraph() == nullptr) return RunEagerly(bound);
  TROUPE_ASSIGN_OR_RETURN(std::shared_ptr<ConcreteFunction> fn, Lookup(bound, true));
  std::vector<Value> inputs;
  TROUPE_RETURN_IF_ERROR(fn->Bind(bound, {}, &inputs));
  return fn->CallInputs(std::move(inputs));
}

Result<std::vector<Tensor>> Function::Run(const std::vector<Arg>& args, const Kwargs& kwargs) {
  TROUPE_ASSIGN_OR_RETURN(std::vector<Value> out, Call(args, kwargs));
  return internal::TensorsOf(out);
}

Result<Tensor> Function::Run1(const std::vector<Arg>& args, const Kwargs& kwargs) {
  TROUPE_ASSIGN_OR_RETURN(std::vector<Tensor> out, Run(args, kwargs));
  if (out.empty()) return InvalidArgumentError("Function '" + name_ + "' returned no outputs");
  return out[0];
}

Value Function::operator()(const std::vector<Arg>& args, const Kwargs& kwargs) {
  Result<std::vector<Value>> out = Call(args, kwargs);
  if (!out.ok()) {
    if (FuncGraph* g = CurrentGraph()) g->RecordError(out.status());
    return Value::Error(out.status());
  }
  if (out->empty()) return Value();
  return (*out)[0];
}

Result<std::shared_ptr<ConcreteFunction>> Function::GetConcreteFunction(
    const std::vector<Arg>& args, const Kwargs& kwargs) {
  TROUPE_ASSIGN_OR_RETURN(std::vector<Arg> bound, Bind(args, kwargs));
  return Lookup(bound, false);
}

}  // namespace troupe
