// `troupe model show NAME | --keras PATH [--json]`: a Keras-style summary of a zoo model or a
// Keras model file (layer, output shape, parameters, totals), or the model as Keras JSON — a
// starting point a user can edit and train with `[model] keras`.
#include <cstdio>
#include <optional>
#include <string>

#include "graph/keras/json_util.h"
#include "graph/keras/model_json.h"
#include "graph/models/zoo.h"
#include "launch/command.h"
#include "launch/flags.h"

namespace troupe::launch {
namespace {

constexpr const char* kSynopsis =
    "troupe model show NAME [--input-shape 28,28,1] [--classes N] | --keras PATH "
    "[--input-shape 224,224,3]  [--json]";

std::string Pad(std::string s, size_t width) {
  if (s.size() < width) s.append(width - s.size(), ' ');
  return s;
}

std::string Thousands(int64_t n) {
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

void PrintSummary(const keras::KerasModel& model) {
  const bool connections = model.functional();
  std::printf("Model: \"%s\" (%s)\n", model.name().c_str(),
              model.functional() ? "Functional" : "Sequential");
  std::string header = Pad("Layer (type)", 42) + Pad("Output Shape", 26) + Pad("Param #", 12);
  if (connections) header += "Connected to";
  const std::string rule(header.size() + (connections ? 12 : 0), '-');
  std::printf("%s\n%s\n%s\n", rule.c_str(), header.c_str(), rule.c_str());
  int64_t total = 0, trainable = 0;
  for (const keras::LayerSummary& row : model.Summary()) {
    std::string shape = row.output_shapes.empty() ? "?" : row.output_shapes[0];
    std::string inbound;
    for (const std::string& in : row.inbound) inbound += (inbound.empty() ? "" : ", ") + in;
    std::string line = Pad(row.name + " (" + row.class_name + ") ", 42) + Pad(shape, 26) +
                       Pad(Thousands(row.params), 12);
    if (connections) line += inbound;
    std::printf("%s\n", line.c_str());
    total += row.params;
    trainable += row.trainable_params;
  }
  std::printf("%s\n Total params: %s\n Trainable params: %s\n Non-trainable params: %s\n",
              rule.c_str(), Thousands(total).c_str(), Thousands(trainable).c_str(),
              Thousands(total - trainable).c_str());
}

// --input-shape D,D,...; nullopt when not given.
Result<std::optional<TensorShape>> InputShapeFlag(const FlagParser& parser) {
  if (!parser.Has("input-shape")) return std::optional<TensorShape>();
  std::vector<int64_t> dims;
  const std::string text = parser.Get("input-shape");
  for (size_t at = 0; at <= text.size();) {
    size_t comma = text.find(',', at);
    if (comma == std::string::npos) comma = text.size();
    const std::string part = text.substr(at, comma - at);
    if (part.empty() || part.find_first_not_of("0123456789") != std::string::npos) {
      return InvalidArgumentError("--input-shape takes dimensions like 28,28,1, got '" + text +
                                  "'");
    }
    dims.push_back(std::stoll(part));
    at = comma + 1;
  }
  TROUPE_ASSIGN_OR_RETURN(TensorShape shape, TensorShape::FromDims(dims));
  return std::optional<TensorShape>(shape);
}

Result<std::unique_ptr<keras::KerasModel>> LoadModel(const FlagParser& parser) {
  const std::vector<std::string>& args = parser.positional();
  const int64_t seed = 0;
  if (parser.Has("keras")) {
    if (args.size() != 1) return InvalidArgumentError("give either NAME or --keras PATH");
    if (parser.Has("classes")) {
      return InvalidArgumentError("--classes is for zoo models; a Keras model has its own");
    }
    return keras::KerasModel::FromFile(parser.Get("keras"), seed);
  }
  if (args.size() != 2) return InvalidArgumentError("expected `troupe model show NAME`");
  TROUPE_ASSIGN_OR_RETURN(std::optional<TensorShape> shape, InputShapeFlag(parser));
  int64_t classes = 0;
  if (parser.Has("classes")) {
    TROUPE_ASSIGN_OR_RETURN(classes, parser.GetInt("classes"));
    if (classes < 1) return InvalidArgumentError("--classes must be >= 1");
  }
  TROUPE_ASSIGN_OR_RETURN(nlohmann::json json, models::ZooModelJson(args[1], shape, classes));
  return keras::KerasModel::FromJson(json, seed);
}

int RunModel(int argc, char** argv) {
  FlagParser parser("troupe model");
  parser.AddFlag("keras", "PATH", "a Keras model: .json from model.to_json() or a .keras file");
  parser.AddFlag("input-shape", "D,D,...",
                 "the example shape without the batch (default: the model's own; a Keras "
                 "model's null dimensions need it)");
  parser.AddFlag("classes", "N", "a zoo model's outputs: classes or vocabulary size");
  parser.AddFlag("json", "",
                 "print the model as Keras JSON (keras.models.model_from_json reads it)");
  Status s = parser.Parse(argc, argv);
  if (parser.help_requested()) {
    std::printf("%s", parser.Usage(kSynopsis).c_str());
    std::printf(
        "\nshow  prints a Keras-style summary of a zoo model (%s) or of a Keras model "
        "file,\n      or with --json the model's Keras JSON.\n",
        [] {
          std::string names;
          for (const std::string& n : models::ZooModelNames()) {
            names += (names.empty() ? "" : ", ") + n;
          }
          return names;
        }()
            .c_str());
    return kExitOk;
  }
  if (s.ok() && (parser.positional().empty() || parser.positional()[0] != "show")) {
    s = InvalidArgumentError("expected `show` (see troupe model --help)");
  }
  Result<std::unique_ptr<keras::KerasModel>> model =
      s.ok() ? LoadModel(parser) : Result<std::unique_ptr<keras::KerasModel>>(s);
  if (!model.ok()) {
    std::fprintf(stderr, "troupe model: %s\n", model.status().message().c_str());
    return model.status().code() == StatusCode::kInvalidArgument && !s.ok() ? kExitUsage
                                                                            : kExitFailure;
  }
  if (parser.Has("json")) {
    std::printf("%s\n", (*model)->config_json().dump().c_str());
    return kExitOk;
  }
  Result<std::optional<TensorShape>> shape = InputShapeFlag(parser);
  if (!shape.ok()) {
    std::fprintf(stderr, "troupe model: %s\n", shape.status().message().c_str());
    return kExitUsage;
  }
  if (Status b = (*model)->Build(shape->value_or((*model)->input_shape())); !b.ok()) {
    std::fprintf(stderr, "troupe model: %s\n", b.message().c_str());
    return kExitFailure;
  }
  PrintSummary(**model);
  return kExitOk;
}

}  // namespace
TROUPE_REGISTER_COMMAND("model", "show a model's layers, shapes and parameters, or its Keras JSON",
                        RunModel);
}  // namespace troupe::launch
