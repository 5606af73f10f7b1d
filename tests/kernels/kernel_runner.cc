// kernel_runner: runs ops listed in a plan file on .npy inputs and writes .npy outputs, so
// tests/interop/kernels_tf_test.py can compare Troupe's kernels with TensorFlow's.
//
// Usage: kernel_runner DIR   (reads DIR/plan.txt)
// Each plan line: CASE OP NUM_INPUTS [ATTR=KIND:VALUE ...]
//   KIND: i (int), b (bool 0/1), f (float), s (string), t (dtype name), li (ints "1,2,-1" or
//   empty). Inputs are DIR/CASE.in<k>.npy; outputs DIR/CASE.out<k>.npy; a failing op writes
//   its status to DIR/CASE.err instead.
//   OP "grad:NAME:i,j": Troupe's registered gradient (graph/ autodiff on an eager tape) of op
//   NAME with respect to inputs i, j; the last input is the output gradient (the seed for
//   output 0), the others are NAME's inputs. Outputs are the gradients in that order.
#include <fstream>
#include <iostream>
#include <sstream>

#include "graph/tape.h"
#include "kernels/op_registry.h"
#include "tests/kernels/npy.h"

namespace troupe {
namespace {

Result<AttrValue> ParseAttr(const std::string& kind, const std::string& v) {
  if (kind == "i") return AttrValue(int64_t{std::stoll(v)});
  if (kind == "b") return AttrValue(v == "1" || v == "true");
  if (kind == "f") return AttrValue(std::stod(v));
  if (kind == "s") return AttrValue(v);
  if (kind == "t") {
    TROUPE_ASSIGN_OR_RETURN(DType d, DTypeFromName(v));
    return AttrValue(d);
  }
  if (kind == "li") {
    std::vector<int64_t> out;
    std::stringstream ss(v);
    for (std::string item; std::getline(ss, item, ',');) {
      if (!item.empty()) out.push_back(std::stoll(item));
    }
    return AttrValue(out);
  }
  return InvalidArgumentError("unknown attr kind '" + kind + "'");
}

// "grad:NAME:i,j" (see the header comment).
Result<std::vector<Tensor>> RunGradient(const std::string& spec, const std::vector<Tensor>& inputs,
                                        const AttrMap& attrs) {
  const size_t colon = spec.find(':', 5);
  if (colon == std::string::npos || inputs.empty()) {
    return InvalidArgumentError("bad gradient case '" + spec + "'");
  }
  const std::string op = spec.substr(5, colon - 5);
  std::vector<int> wrt;
  std::stringstream ss(spec.substr(colon + 1));
  for (std::string item; std::getline(ss, item, ',');) wrt.push_back(std::stoi(item));
  std::vector<Value> in(inputs.begin(), inputs.end() - 1);
  Value seed(inputs.back());
  GradientTape tape;
  std::vector<Value> sources;
  for (int i : wrt) {
    tape.Watch(in[static_cast<size_t>(i)]);
    sources.push_back(in[static_cast<size_t>(i)]);
  }
  std::vector<Value> y = Apply(op, in, attrs);
  if (y.empty()) return InvalidArgumentError(op + " has no outputs");
  if (!y[0].ok()) return y[0].status();
  TROUPE_ASSIGN_OR_RETURN(std::vector<Value> grads, tape.Gradient(y[0], sources, seed));
  std::vector<Tensor> out;
  for (const Value& g : grads) {
    TROUPE_ASSIGN_OR_RETURN(Tensor t, g.tensor());
    out.push_back(t);
  }
  return out;
}

Status RunCase(const std::string& dir, const std::string& line) {
  std::istringstream ss(line);
  std::string name, op;
  int num_inputs = 0;
  ss >> name >> op >> num_inputs;
  AttrMap attrs;
  for (std::string tok; ss >> tok;) {
    const size_t eq = tok.find('='), colon = tok.find(':', eq);
    if (eq == std::string::npos || colon == std::string::npos) {
      return InvalidArgumentError("bad attr token '" + tok + "'");
    }
    TROUPE_ASSIGN_OR_RETURN(AttrValue v,
                            ParseAttr(tok.substr(eq + 1, colon - eq - 1), tok.substr(colon + 1)));
    attrs.Set(tok.substr(0, eq), v);
  }
  std::vector<Tensor> inputs;
  for (int i = 0; i < num_inputs; ++i) {
    TROUPE_ASSIGN_OR_RETURN(
        Tensor t, testing_util::ReadNpy(dir + "/" + name + ".in" + std::to_string(i) + ".npy"));
    inputs.push_back(t);
  }
  auto outputs =
      op.rfind("grad:", 0) == 0 ? RunGradient(op, inputs, attrs) : RunOp(op, inputs, attrs);
  if (!outputs.ok()) {
    std::ofstream(dir + "/" + name + ".err") << outputs.status().ToString();
    return Status::OK();
  }
  for (size_t i = 0; i < outputs->size(); ++i) {
    TROUPE_RETURN_IF_ERROR(testing_util::WriteNpy(
        dir + "/" + name + ".out" + std::to_string(i) + ".npy", (*outputs)[i]));
  }
  return Status::OK();
}

}  // namespace
}  // namespace troupe

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: kernel_runner DIR (runs DIR/plan.txt)\n";
    return 2;
  }
  const std::string dir = argv[1];
  std::ifstream plan(dir + "/plan.txt");
  if (!plan) {
    std::cerr << "kernel_runner: cannot open " << dir << "/plan.txt\n";
    return 2;
  }
  int failures = 0;
  for (std::string line; std::getline(plan, line);) {
    if (line.empty() || line[0] == '#') continue;
    troupe::Status s = troupe::RunCase(dir, line);
    if (!s.ok()) {
      std::cerr << "kernel_runner: " << line << ": " << s << "\n";
      ++failures;
    }
  }
  return failures == 0 ? 0 : 1;
}
