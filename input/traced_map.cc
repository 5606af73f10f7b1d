#include "input/traced_map.h"

#include <mutex>

namespace troupe::input {
namespace {

class TracedMapFunction final : public MapFunction {
 public:
  explicit TracedMapFunction(std::shared_ptr<Function> fn) : fn_(std::move(fn)) {}

  Result<ElementSpec> OutputSpec(const ElementSpec& input_spec) const override {
    std::vector<Arg> args;
    for (const TensorSpec& s : input_spec) args.emplace_back(s);
    TROUPE_ASSIGN_OR_RETURN(auto cf, fn_->GetConcreteFunction(args));
    std::lock_guard<std::mutex> l(mu_);
    concrete_ = cf;
    return cf->output_specs();
  }

  Result<Element> Call(Element args) const override {
    std::shared_ptr<ConcreteFunction> cf;
    {
      std::lock_guard<std::mutex> l(mu_);
      cf = concrete_;
    }
    if (!cf) return FailedPreconditionError("traced map function used before it was traced");
    return cf->RunFlat(std::span<const Tensor>(args.data(), args.size()));
  }

  std::string name() const override { return fn_->name(); }

 private:
  std::shared_ptr<Function> fn_;
  mutable std::mutex mu_;
  mutable std::shared_ptr<ConcreteFunction> concrete_;
};

}  // namespace

MapFunctionPtr TracedFunction(std::shared_ptr<Function> fn) {
  return std::make_shared<TracedMapFunction>(std::move(fn));
}

}  // namespace troupe::input
