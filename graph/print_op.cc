#include "graph/print_op.h"

#include <cstdio>
#include <iostream>
#include <mutex>

#include "core/dtype_traits.h"
#include "graph/function.h"
#include "graph/graph_op.h"

namespace troupe {
namespace {

std::mutex& SinkMutex() {
  static std::mutex* mu = new std::mutex();
  return *mu;
}
PrintSink& Sink() {
  static PrintSink* sink = new PrintSink();
  return *sink;
}

void Emit(const std::string& line) {
  std::lock_guard<std::mutex> lock(SinkMutex());
  if (Sink()) {
    Sink()(line);
  } else {
    std::cout << line << std::endl;
  }
}

// tf.print's float format: %.9g for float32 (%.17g for float64); %g drops trailing zeros.
template <typename F>
std::string FormatFloat(F v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", sizeof(F) == 4 ? 9 : 17, static_cast<double>(v));
  return buf;
}

std::string FormatElement(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DType::kString:
      return t.data<std::string>()[i];
    case DType::kBool:
      return t.data<bool>()[i] ? "True" : "False";
    case DType::kFloat32:
      return FormatFloat(t.data<float>()[i]);
    case DType::kFloat64:
      return FormatFloat(t.data<double>()[i]);
    default: {
      std::string out;
      bool ok = VisitNumericDType(t.dtype(), [&](auto tag) {
        using T = decltype(tag);
        if constexpr (std::is_integral_v<T>) {
          out = std::to_string(t.data<T>()[i]);
        } else {
          out = FormatFloat(static_cast<float>(t.data<T>()[i]));
        }
      });
      return ok ? out : "?";
    }
  }
}

void FormatDim(const Tensor& t, int dim, int64_t offset, int summarize, std::string* out) {
  const int rank = t.rank();
  if (dim == rank) {
    *out += FormatElement(t, offset);
    return;
  }
  int64_t stride = 1;
  for (int d = dim + 1; d < rank; ++d) stride *= t.dim(d);
  const int64_t n = t.dim(dim);
  *out += "[";
  auto item = [&](int64_t i, bool first) {
    if (!first)
      *out += dim + 1 == rank ? " " : "\n" + std::string(static_cast<size_t>(dim + 1), ' ');
    FormatDim(t, dim + 1, offset + i * stride, summarize, out);
  };
  if (summarize >= 0 && n > 2 * summarize) {
    for (int64_t i = 0; i < summarize; ++i) item(i, i == 0);
    *out +=
        dim + 1 == rank ? " ..." : "\n" + std::string(static_cast<size_t>(dim + 1), ' ') + "...";
    for (int64_t i = n - summarize; i < n; ++i) item(i, false);
  } else {
    for (int64_t i = 0; i < n; ++i) item(i, i == 0);
  }
  *out += "]";
}

class PrintOp final : public GraphOp {
 public:
  explicit PrintOp(const std::vector<PrintItem>& items) {
    for (const PrintItem& item : items) items_.emplace_back(item.is_value(), item.text());
  }
  std::string_view type() const override { return "PrintV2"; }
  Effect effect() const override { return Effect::kSideEffect; }
  Result<std::vector<TensorSpec>> InferSpecs(std::span<const TensorSpec>) const override {
    return std::vector<TensorSpec>{};
  }
  Status Run(std::span<const Tensor> in, std::vector<Tensor>&, const GraphOpContext&) override {
    std::string line;
    size_t next = 0;
    for (size_t i = 0; i < items_.size(); ++i) {
      if (i) line += " ";
      if (items_[i].first) {
        line += FormatTensorForPrint(in[next++]);
      } else {
        line += items_[i].second;
      }
    }
    Emit(line);
    return Status::OK();
  }

 private:
  // (is a tensor, text); the tensors are the op's inputs, in order. Holding no Values keeps
  // the graph free of reference cycles.
  std::vector<std::pair<bool, std::string>> items_;
};

}  // namespace

PrintItem::PrintItem(const Arg& arg) : value_(arg.value()), is_value_(true) {}

std::string FormatTensorForPrint(const Tensor& t, int summarize) {
  std::string out;
  FormatDim(t, 0, 0, summarize, &out);
  return out;
}

PrintSink SetPrintSink(PrintSink sink) {
  std::lock_guard<std::mutex> lock(SinkMutex());
  PrintSink old = std::move(Sink());
  Sink() = std::move(sink);
  return old;
}

Status Print(const std::vector<PrintItem>& items) {
  std::vector<Value> inputs;
  for (const PrintItem& item : items) {
    if (item.is_value()) inputs.push_back(item.value());
  }
  std::vector<Value> out = ApplyGraphOp(std::make_shared<PrintOp>(items), inputs, "PrintV2");
  return FirstError(out);
}

}  // namespace troupe
