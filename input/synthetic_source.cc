#include "input/synthetic_source.h"

#include <numeric>

#include "core/philox.h"
#include "input/source_keys.h"

namespace troupe::input {
namespace {

// Example i of the test split is example i + kTestOffset of the stream: disjoint from training.
constexpr int64_t kTestOffset = int64_t{1} << 40;

Result<Element> SyntheticToModel(const Element& raw, int64_t seed, const TensorShape& shape,
                                 int64_t num_classes) {
  if (raw.size() != 1 || raw[0].dtype() != DType::kInt64 || raw[0].rank() != 1) {
    return InvalidArgumentError("synthetic: expected a batch of example indices (int64 [n])");
  }
  const int64_t n = raw[0].dim(0);
  const int64_t size = shape.num_elements();
  std::vector<int64_t> dims{n};
  for (int64_t d : shape.dims()) dims.push_back(d);
  TROUPE_ASSIGN_OR_RETURN(Tensor x, Tensor::Allocate(DType::kFloat32, TensorShape(dims)));
  TROUPE_ASSIGN_OR_RETURN(Tensor y, Tensor::Allocate(DType::kInt32, TensorShape{n}));
  for (int64_t r = 0; r < n; ++r) {
    const int64_t index = raw[0].data<int64_t>()[r];
    PhiloxSingleSample gen(static_cast<uint64_t>(seed), static_cast<uint64_t>(index));
    y.data<int32_t>()[r] = static_cast<int32_t>(gen() % static_cast<uint32_t>(num_classes));
    float* dst = x.data<float>() + r * size;
    // 24 random bits per value: exactly representable, uniform in [0, 1).
    for (int64_t i = 0; i < size; ++i) dst[i] = static_cast<float>(gen() >> 8) * 0x1p-24f;
  }
  return Element{std::move(x), std::move(y)};
}

}  // namespace

Result<SourceData> OpenSyntheticSource(const DataSourceSpec& spec, DataSplit split,
                                       const InputContext&) {
  if (spec.num_classes < 1 || spec.num_classes > (int64_t{1} << 31)) {
    return InvalidArgumentError("num_classes: the synthetic source needs it >= 1");
  }
  if (spec.synthetic_examples < 1) {
    return InvalidArgumentError("synthetic_examples: the synthetic source needs it >= 1");
  }
  if (spec.image.shape.empty()) {
    return InvalidArgumentError(
        "features.image.shape: the synthetic source takes its examples' shape from it; it is "
        "empty");
  }
  const TensorShape shape(spec.image.shape);
  const bool train = split == DataSplit::kTrain;
  const int64_t count =
      train ? spec.synthetic_examples : std::max<int64_t>(1, spec.synthetic_examples / 10);
  const int64_t first = train ? 0 : kTestOffset;
  SourceData out;
  out.examples = Dataset::Range(first, first + count);
  const int64_t seed = spec.seed, classes = spec.num_classes;
  out.to_model = [seed, shape, classes](const Element& raw) {
    return SyntheticToModel(raw, seed, shape, classes);
  };
  out.feature_shape = shape;
  out.num_classes = spec.num_classes;
  out.input_range = "random float32 values in [0, 1)";
  return out;
}

DataSource SyntheticSource() {
  DataSource source;
  source.open = OpenSyntheticSource;
  source.keys = {
      NumClassesKey(),
      config::Only(
          config::Int<DataSourceSpec>("synthetic_examples", &DataSourceSpec::synthetic_examples, 1,
                                      "Random examples per epoch of the synthetic "
                                      "source."),
          "only the synthetic source makes examples up"),
      ImageShapeKey(),
  };
  source.check = NeedNumClasses;
  return source;
}

}  // namespace troupe::input
