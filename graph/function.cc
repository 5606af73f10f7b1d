#include "graph/function.h"

#include <atomic>
#include <cstring>

#include "core/logging.h"
#include "graph/tape.h"

namespace troupe {
namespace {

std::atomic<bool> g_run_eagerly{false};
std::atomic<int64_t> g_concrete_counter{0};

std::string PyShape(const TensorShape& shape) {
  if (shape.unknown_rank()) return "<unknown>";
  std::string out = "(";
  for (int i = 0; i < shape.rank(); ++i) {
    if (i) out += ", ";
    out += shape.dim(i) < 0 ? "None" : std::to_string(shape.dim(i));
  }
  if (shape.rank() == 1) out += ",";
  return out + ")";
}

std::string TensorDesc(const TensorSpec& s) {
  return std::string(DTypeName(s.dtype)) + " Tensor, shape=" + PyShape(s.shape);
}

// Every dim of `call` fits `traced` (unknown traced dims accept anything).
bool IsSubtype(const TensorSpec& call, const TensorSpec& traced) {
  if (call.dtype != traced.dtype) return false;
  if (traced.shape.unknown_rank()) return true;
  if (call.shape.unknown_rank() || call.shape.rank() != traced.shape.rank()) return false;
  for (int i = 0; i < traced.shape.rank(); ++i) {
    if (traced.shape.dim(i) >= 0 && call.shape.dim(i) != traced.shape.dim(i)) return false;
  }
  return true;
}

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

// ---------------------------------------------------------------------------------- Arg

Arg Arg::Object(const void* identity, std::string type_name) {
  Arg a;
  a.kind_ = Kind::kObject;
  a.object_ = identity;
  a.str_ = std::move(type_name);
  return a;
}

Value Arg::value() const {
  switch (kind_) {
    case Kind::kTensor:
      return value_;
    case Kind::kVariable:
      return var_.Read();
    default:
      return Value::Error(InvalidArgumentError("argument (" + Describe() + ") is not a tensor"));
  }
}

TensorSpec Arg::spec() const {
  if (kind_ == Kind::kSpec) return spec_;
  if (kind_ == Kind::kTensor && value_.ok()) return value_.spec();
  return TensorSpec{TensorShape::UnknownRank(), DType::kInvalid, ""};
}

std::string Arg::Describe() const {
  switch (kind_) {
    case Kind::kNone:
      return "None";
    case Kind::kTensor:
    case Kind::kSpec:
      return TensorDesc(spec());
    case Kind::kInt:
      return "int value " + std::to_string(int_);
    case Kind::kFloat: {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.17g", float_);
      return std::string("float value ") + buf;
    }
    case Kind::kBool:
      return std::string("bool value ") + (int_ ? "True" : "False");
    case Kind::kString:
      return "str value '" + str_ + "'";
    case Kind::kVariable:
      return "Variable '" + (var_.valid() ? var_.name() : std::string("<invalid>")) + "'";
    case Kind::kObject:
      return str_ + " object";
    case Kind::kList: {
      std::string out = "list [";
      for (size_t i = 0; i < list_.size(); ++i) out += (i ? ", " : "") + list_[i].Describe();
      return out + "]";
    }
  }
  return "?";
}

bool Arg::SameStatic(const Arg& o) const {
  if (kind_ != o.kind_) return false;
  switch (kind_) {
    case Kind::kNone:
      return true;
    case Kind::kInt:
    case Kind::kBool:
      return int_ == o.int_;
    case Kind::kFloat:
      return std::memcmp(&float_, &o.float_, sizeof float_) == 0;
    case Kind::kString:
      return str_ == o.str_;
    case Kind::kVariable:
      return var_ == o.var_;
    case Kind::kObject:
      return object_ == o.object_;
    case Kind::kList:
      if (list_.size() != o.list_.size()) return false;
      for (size_t i = 0; i < list_.size(); ++i) {
        if (!list_[i].SameStatic(o.list_[i])) return false;
      }
      return true;
    case Kind::kTensor:
    case Kind::kSpec:
      return false;
  }
  return false;
}

const Arg& Args::operator[](std::string_view name) const {
  static const Arg* none = new Arg();
  if (names_ != nullptr) {
    for (size_t i = 0; i < names_->size() && i < args_.size(); ++i) {
      if ((*names_)[i] == name) return args_[i];
    }
  }
  return *none;
}

// ----------------------------------------------------------------------- ConcreteFunction

std::vector<TensorSpec> ConcreteFunction::input_specs() const { return specs_; }

std::string ConcreteFunction::SignatureString() const {
  std::string out = function_name_ + "(";
  std::string args;
  for (size_t i = 0; i < params_.size(); ++i) {
    const Param& p = params_[i];
    out += (i ? ", " : "") + p.name;
    if (!p.traced.is_tensor()) {
      std::string d = p.traced.Describe();
      // "int value 2" -> "2"
      size_t pos = d.find(" value ");
      out += "=" + (pos == std::string::npos ? d : d.substr(pos + 7));
    } else {
      args += "    " + p.name + ": " + TensorDesc(p.traced.spec()) + "\n";
    }
  }
  out += ")\n";
  if (!args.empty()) out += "  Args:\n" + args;
  std::vector<TensorSpec> outs = output_specs();
  if (outs.empty()) {
    out += "  Returns:\n    None\n";
  } else {
    out += "  Returns:\n";
    for (const TensorSpec& s : outs) out += "    " + TensorDesc(s) + "\n";
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

Status ConcreteFunction::CheckInput(int index, const TensorSpec& got) const {
  const TensorSpec& want = specs_[static_cast<size_t>(index)];
  std::string both = " (input '" + want.name + "': expected " + want.ToString() + ", got " +
                     TensorSpec{got.shape, got.dtype, ""}.ToString() + ")";
  if (got.dtype != want.dtype) {
    return InvalidArgumentError("cannot compute " + name_ + " as input #" + std::to_string(index) +
                                "(zero-based) was expected to be a " +
                                std::string(DTypeName(want.dtype)) + " tensor but is a " +
                                std::string(DTypeName(got.dtype)) + " tensor" + both);
  }
  if (!IsSubtype(got, want)) {
    return InvalidArgumentError("cannot compute " + name_ + " as input #" + std::to_string(index) +
                                "(zero-based) was expected to have shape " + want.shape.ToString() +
                                " but has shape " + got.shape.ToString() + both);
  }
  return Status::OK();
}

Status ConcreteFunction::Match(const Param& p, const Arg& traced, const Arg& given,
                               std::vector<Value>* inputs) const {
  if (traced.is_tensor()) {
    if (given.kind() == Arg::Kind::kVariable) {
      inputs->push_back(given.variable().Read());
    } else if (given.kind() == Arg::Kind::kTensor) {
      inputs->push_back(given.value());
    } else {
      return InvalidArgumentError("ConcreteFunction " + function_name_ + "(" + param_list_ +
                                  ") expects a tensor for " + p.name + ", got " + given.Describe());
    }
    const int index = static_cast<int>(inputs->size()) - 1;
    if (!inputs->back().ok()) return inputs->back().status();
    return CheckInput(index, inputs->back().spec());
  }
  if (traced.kind() == Arg::Kind::kList && given.kind() == Arg::Kind::kList &&
      traced.list().size() == given.list().size()) {
    for (size_t i = 0; i < traced.list().size(); ++i) {
      TROUPE_RETURN_IF_ERROR(Match(p, traced.list()[i], given.list()[i], inputs));
    }
    return Status::OK();
  }
  if (!given.SameStatic(traced)) {
    return InvalidArgumentError("ConcreteFunction " + function_name_ + "(" + param_list_ +
                                ") was constructed with " + traced.Describe() + " in " + p.name +
                                ", but was called with " + given.Describe() + ".");
  }
  return Status::OK();
}

Status ConcreteFunction::Bind(const std::vector<Arg>& args, const Kwargs& kwargs,
                              std::vector<Value>* inputs) const {
  if (args.size() > params_.size()) {
    return InvalidArgumentError("ConcreteFunction " + function_name_ + "(" + param_list_ +
                                ") takes " + std::to_string(params_.size()) + " arguments, got " +
                                std::to_string(args.size()));
  }
  std::vector<const Arg*> given(params_.size(), nullptr);
  for (size_t i = 0; i < args.size(); ++i) given[i] = &args[i];
  for (const auto& [name, arg] : kwargs) {
    size_t i = 0;
    while (i < params_.size() && params_[i].name != name) ++i;
    if (i == params_.size()) {
      return InvalidArgumentError("ConcreteFunction " + function_name_ + "(" + param_list_ +
                                  ") got an unexpected keyword argument '" + name + "'");
    }
    if (given[i] != nullptr) {
      return InvalidArgumentError("ConcreteFunction " + function_name_ + "(" + param_list_ +
                                  ") got multiple values for argument '" + name + "'");
    }
    given[i] = &arg;
  }
  inputs->clear();
  for (size_t i = 0; i < params_.size(); ++i) {
    const Param& p = params_[i];
    if (given[i] == nullptr) {
      // Non-tensor parameters default to their traced value.
      if (!p.traced.is_tensor() && p.traced.kind() != Arg::Kind::kList) continue;
      return InvalidArgumentError("ConcreteFunction " + function_name_ + "(" + param_list_ +
                                  ") missing required argument '" + p.name + "'");
    }
    TROUPE_RETURN_IF_ERROR(Match(p, p.traced, *given[i], inputs));
  }
  return Status::OK();
}

Result<Executor*> ConcreteFunction::GetExecutor() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!executor_) {
    TROUPE_ASSIGN_OR_RETURN(executor_, Executor::Create(graph_, device_));
  }
  return executor_.get();
}

ExecutorStats ConcreteFunction::stats() const {
  return executor_ ? executor_->stats() : ExecutorStats{};
}

Result<std::vector<Tensor>> ConcreteFunction::RunFlat(std::span<const Tensor> inputs,
                                                      const Executor::OutputReadyFn& on_ready) {
  if (inputs.size() != specs_.size()) {
    return InvalidArgumentError(name_ + " takes " + std::to_string(specs_.size()) +
                                " tensor inputs, got " + std::to_string(inputs.size()));
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    TROUPE_RETURN_IF_ERROR(CheckInput(static_cast<int>(i), TensorSpec::From(inputs[i])));
  }
  TROUPE_ASSIGN_OR_RETURN(Executor * ex, GetExecutor());
  return ex->Run(inputs, on_ready);
}

Result<std::vector<Value>> ConcreteFunction::CallInputs(std::vector<Value> inputs) {
  TROUPE_RETURN_IF_ERROR(FirstError(inputs));
  bool symbolic = CurrentGraph() != nullptr;
  for (const Value& v : inputs) symbolic |= v.symbolic();
  // While tracing, and eagerly under a tape, run op by op so that the ops are recorded.
  if (symbolic || internal::ActiveTapeCount() > 0) return InlineGraph(*graph_, inputs);
  std::vector<Tensor> tensors;
  tensors.reserve(inputs.size());
  for (const Value& v : inputs) tensors.push_back(v.eager_tensor());
  TROUPE_ASSIGN_OR_RETURN(Executor * ex, GetExecutor());
  TROUPE_ASSIGN_OR_RETURN(std::vector<Tensor> out, ex->Run(tensors));
  std::vector<Value> values;
  values.reserve(out.size());
  for (Tensor& t : out) values.emplace_back(std::move(t));
  return values;
}

Result<std::vector<Value>> ConcreteFunction::Call(const std::vector<Arg>& args,
                                                  const Kwargs& kwargs) {
  std::vector<Value> inputs;
  TROUPE_RETURN_IF_ERROR(Bind(args, kwargs, &inputs));
  return CallInputs(std::move(inputs));
}

Result<std::vector<Tensor>> ConcreteFunction::Run(const std::vector<Arg>& args,
                                                  const Kwargs& kwargs) {
  TROUPE_ASSIGN_OR_RETURN(std::vector<Value> out, Call(args, kwargs));
  std::vector<Tensor> tensors;
  tensors.reserve(out.size());
  for (const Value& v : out) {
    TROUPE_ASSIGN_OR_RETURN(Tensor t, v.tensor());
    tensors.push_back(std::move(t));
  }
  return tensors;
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
  std::vector<Tensor> tensors;
  tensors.reserve(out.size());
  for (const Value& v : out) {
    TROUPE_ASSIGN_OR_RETURN(Tensor t, v.tensor());
    tensors.push_back(std::move(t));
  }
  return tensors;
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
