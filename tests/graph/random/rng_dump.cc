// rng_dump: runs a script of RNG commands (stdin, one a line) through Troupe's Generator and
// stateless ops and prints each result's raw bytes as hex, one line per result. The interop
// tests (tests/interop/rng_*.py) send the same cases to TensorFlow and compare the bytes.
//
//   gen NAME ALG seed INT | list A,B,.. | state A,B,..   create a generator
//   replica NAME K|none                                  replica context (key hashing)
//   draw NAME DIST DTYPE SHAPE [P1 P2]                   -> bytes
//   skip NAME DELTA                                      -> old state (int64[3])
//   split NAME COUNT PREFIX                              children PREFIX0, PREFIX1, ...
//   make_seeds NAME COUNT                                -> int64[2, COUNT]
//   reset_from_seed NAME INT
//   state NAME                                           -> int64 state
//   stateless DIST DTYPE SHAPE SEED_DTYPE S0,S1 ALG [P1 P2]  -> bytes
//   stateless_split SEED_DTYPE S0,S1 NUM ALG             -> bytes
//   fold_in SEED_DTYPE S0,S1 DATA_DTYPE DATA ALG         -> bytes
//   xla_f16 round_each_op|fused_multiply_add             float16 arithmetic of XLA's ThreeFry
//                                                        ops (Troupe's rule, or the model of
//                                                        XLA on CPUs with AVX512-FP16)
// DIST: uniform (P = min max), normal / truncated_normal (P = mean stddev), uniform_int (P =
// min max), uniform_full_int. SHAPE: "scalar" or dims joined by ','. Errors print "ERROR ...".
#include <cstdio>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "graph/random/generator.h"
#include "kernels/random/stateless.h"
#include "kernels/random/xla_cpu_math.h"

namespace troupe::random {
namespace {

std::vector<int64_t> Ints(const std::string& text) {
  std::vector<int64_t> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) out.push_back(std::stoll(item, nullptr, 0));
  return out;
}

TensorShape Shape(const std::string& text) {
  if (text == "scalar") return TensorShape{};
  return TensorShape(Ints(text));
}

std::string Hex(const Tensor& t) {
  static const char* kDigits = "0123456789abcdef";
  const auto* p = static_cast<const unsigned char*>(t.raw_data());
  std::string out(t.byte_size() * 2, '0');
  for (size_t i = 0; i < t.byte_size(); ++i) {
    out[2 * i] = kDigits[p[i] >> 4];
    out[2 * i + 1] = kDigits[p[i] & 15];
  }
  return out.empty() ? "-" : out;
}

void Emit(const Result<Tensor>& r) {
  if (r.ok()) {
    std::cout << Hex(*r) << "\n";
  } else {
    std::cout << "ERROR " << r.status().message() << "\n";
  }
}

Result<Tensor> DrawFrom(Generator& g, const std::string& dist, DType dtype,
                        const TensorShape& shape, const std::vector<std::string>& p) {
  const bool has = p.size() >= 2;
  if (dist == "uniform") {
    return g.Uniform(shape, has ? std::stod(p[0]) : 0.0, has ? std::stod(p[1]) : 1.0, dtype);
  }
  if (dist == "normal") {
    return g.Normal(shape, has ? std::stod(p[0]) : 0.0, has ? std::stod(p[1]) : 1.0, dtype);
  }
  if (dist == "truncated_normal") {
    return g.TruncatedNormal(shape, has ? std::stod(p[0]) : 0.0, has ? std::stod(p[1]) : 1.0,
                             dtype);
  }
  if (dist == "uniform_int") {
    return g.UniformInt(shape, std::stoll(p.at(0), nullptr, 0), std::stoll(p.at(1), nullptr, 0),
                        dtype);
  }
  return g.UniformFullInt(shape, dtype);
}

Result<Tensor> Stateless(const std::string& dist, DType dtype, const TensorShape& shape,
                         const Tensor& seed, RngAlgorithm alg, const std::vector<std::string>& p) {
  const bool has = p.size() >= 2;
  if (dist == "uniform") {
    return StatelessUniform(shape, seed, dtype, has ? std::stod(p[0]) : 0.0,
                            has ? std::stod(p[1]) : 1.0, alg);
  }
  if (dist == "normal") {
    return StatelessNormal(shape, seed, has ? std::stod(p[0]) : 0.0, has ? std::stod(p[1]) : 1.0,
                           dtype, alg);
  }
  if (dist == "truncated_normal") {
    return StatelessTruncatedNormal(shape, seed, has ? std::stod(p[0]) : 0.0,
                                    has ? std::stod(p[1]) : 1.0, dtype, alg);
  }
  if (dist == "uniform_int") {
    return StatelessUniformInt(shape, seed, dtype, std::stoll(p.at(0), nullptr, 0),
                               std::stoll(p.at(1), nullptr, 0), alg);
  }
  return StatelessUniformFullInt(shape, seed, dtype, alg);
}

int Main() {
  std::ios::sync_with_stdio(false);
  std::map<std::string, Generator> gens;
  std::string line;
  while (std::getline(std::cin, line)) {
    std::stringstream ss(line);
    std::vector<std::string> w;
    for (std::string t; ss >> t;) w.push_back(t);
    if (w.empty()) continue;
    const std::string& cmd = w[0];
    auto gen = [&](const std::string& name) -> Generator& { return gens.at(name); };
    auto dtype = [](const std::string& s) { return *DTypeFromName(s); };
    auto alg = [](const std::string& s) { return *RngAlgorithmFromName(s); };
    try {
      if (cmd == "gen") {
        Result<Generator> g = w[3] == "seed" ? Generator::FromSeed(*SeedInt::Parse(w[4]), alg(w[2]))
                              : w[3] == "list" ? Generator::FromSeedList(Ints(w[4]), alg(w[2]))
                                               : Generator::FromState(Ints(w[4]), alg(w[2]));
        if (!g.ok()) {
          std::cout << "ERROR " << g.status().message() << "\n";
        } else {
          gens.erase(w[1]);
          gens.emplace(w[1], std::move(*g));
        }
      } else if (cmd == "replica") {
        gen(w[1]).set_replica_id(w[2] == "none" ? std::nullopt
                                                : std::optional<int64_t>(std::stoll(w[2])));
      } else if (cmd == "draw") {
        Emit(DrawFrom(gen(w[1]), w[2], dtype(w[3]), Shape(w[4]),
                      std::vector<std::string>(w.begin() + 5, w.end())));
      } else if (cmd == "skip") {
        Emit(gen(w[1]).Skip(std::stoll(w[2])));
      } else if (cmd == "split") {
        Result<std::vector<Generator>> kids = gen(w[1]).Split(std::stoll(w[2]));
        if (!kids.ok()) continue;
        for (size_t i = 0; i < kids->size(); ++i) {
          const std::string name = w[3] + std::to_string(i);
          gens.erase(name);
          gens.emplace(name, std::move((*kids)[i]));
        }
      } else if (cmd == "make_seeds") {
        Emit(gen(w[1]).MakeSeeds(std::stoll(w[2])));
      } else if (cmd == "reset_from_seed") {
        (void)gen(w[1]).ResetFromSeed(*SeedInt::Parse(w[2]));
      } else if (cmd == "state") {
        Emit(gen(w[1]).state().DeepCopy());
      } else if (cmd == "stateless") {
        const std::vector<int64_t> s = Ints(w[5]);
        Tensor seed = *MakeSeed(s[0], s[1], dtype(w[4]));
        Emit(Stateless(w[1], dtype(w[2]), Shape(w[3]), seed, alg(w[6]),
                       std::vector<std::string>(w.begin() + 7, w.end())));
      } else if (cmd == "stateless_split") {
        const std::vector<int64_t> s = Ints(w[2]);
        Emit(StatelessSplit(*MakeSeed(s[0], s[1], dtype(w[1])), std::stoll(w[3]), alg(w[4])));
      } else if (cmd == "fold_in") {
        const std::vector<int64_t> s = Ints(w[2]);
        Tensor data = dtype(w[3]) == DType::kInt32
                          ? Tensor::Scalar<int32_t>(static_cast<int32_t>(std::stoll(w[4])))
                          : Tensor::Scalar<int64_t>(std::stoll(w[4]));
        Emit(StatelessFoldIn(*MakeSeed(s[0], s[1], dtype(w[1])), data, alg(w[5])));
      } else if (cmd == "xla_f16") {
        xla::XlaFloat16 arithmetic;
        if (!xla::XlaFloat16FromName(w.at(1), &arithmetic)) {
          std::cout << "ERROR unknown float16 arithmetic '" << w[1] << "'\n";
        } else {
          xla::SetXlaFloat16ModelForTesting(arithmetic);
        }
      } else {
        std::cout << "ERROR unknown command '" << cmd << "'\n";
      }
    } catch (const std::exception& e) {
      std::cout << "ERROR bad command line '" << line << "': " << e.what() << "\n";
    }
  }
  return 0;
}

}  // namespace
}  // namespace troupe::random

int main() { return troupe::random::Main(); }
