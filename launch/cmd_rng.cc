// `troupe rng`: prints random numbers equal to TensorFlow's for the same seed and algorithm —
// from a tf.random.Generator.from_seed(S, alg) (optionally as replica K of R inside a
// distribution strategy) or from the stateless ops (tf.random.stateless_*) with seed [A, B].
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "core/dtype_traits.h"
#include "graph/random/generator.h"
#include "kernels/random/stateless.h"
#include "launch/command.h"
#include "launch/flags.h"

namespace troupe::launch {
namespace {

using random::Generator;
using random::RngAlgorithm;

constexpr char kSynopsis[] =
    "troupe rng --seed S --dist DIST --count N [--alg philox|threefry] [--dtype TYPE]\n"
    "                  [--min A --max B] [--replica K --replicas R] [--stateless]";

constexpr char kHelp[] =
    "\nPrints N random numbers, one a line, bit-equal to TensorFlow 2.x for the same arguments\n"
    "(floats with round-trip precision: %.9g for float32, %.17g for float64).\n"
    "\n"
    "Without --stateless the numbers come from tf.random.Generator.from_seed(S, alg), one draw\n"
    "of shape [N]: S is an integer of any size (decimal or 0x hex, negative allowed) or a\n"
    "comma list used as the state (e.g. 0,12,34). With --replica K --replicas R the draw is\n"
    "replica K's inside a distribution strategy with R replicas (the generator created in the\n"
    "strategy scope), whose key is hashed with K.\n"
    "\n"
    "With --stateless they come from tf.random.stateless_<dist>(shape=[N], seed=[A, B],\n"
    "alg=...): S must be two integers A,B.\n"
    "\n"
    "philox equals TF's CPU kernels; threefry equals TF under XLA (jit_compile=True), the only\n"
    "place TF runs ThreeFry.\n"
    "\n"
    "Distributions and dtypes:\n"
    "  uniform, normal, truncated_normal   float32 (default) or float64; uniform uses\n"
    "                                      [--min, --max) (default [0, 1))\n"
    "  uniform_int                         int32 or int64 (default) in [--min, --max), both\n"
    "                                      required, min < max\n"
    "  uniform_full_int                    int32 or int64 (default), every bit random\n"
    "\n"
    "Example:\n"
    "  troupe rng --alg philox --seed 1234 --dist normal --count 6\n"
    "  troupe rng --stateless --seed 1,2 --dist uniform_int --dtype int32 --min 0 --max 10 "
    "--count 5\n";

struct Options {
  RngAlgorithm alg = RngAlgorithm::kPhilox;
  std::string seed;
  bool stateless = false;
  std::optional<int64_t> replica;
  std::string dist;
  DType dtype = DType::kFloat32;
  int64_t count = 0;
  std::string min, max;
};

Status Usage(const std::string& message) { return InvalidArgumentError("troupe rng: " + message); }

Result<std::vector<int64_t>> ParseIntList(const std::string& text, const std::string& flag) {
  std::vector<int64_t> out;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = text.find(',', start);
    const std::string item =
        text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    Result<random::SeedInt> v = random::SeedInt::Parse(item);
    if (!v.ok() || !v->FitsInt64()) {
      return Usage(flag + ": '" + item + "' is not a 64-bit integer (in '" + text + "')");
    }
    out.push_back(static_cast<int64_t>(v->Chunk(0)));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

Result<Options> ReadOptions(const FlagParser& p) {
  Options o;
  if (!p.Has("seed")) return Usage("--seed is required (an integer, or A,B with --stateless)");
  if (!p.Has("dist")) {
    return Usage(
        "--dist is required: uniform, normal, truncated_normal, uniform_int or "
        "uniform_full_int");
  }
  if (!p.Has("count")) return Usage("--count is required (how many numbers to print)");
  Result<RngAlgorithm> alg = random::RngAlgorithmFromName(p.Get("alg"));
  if (!alg.ok()) return Usage("--alg: " + alg.status().message());
  o.alg = *alg;
  o.seed = p.Get("seed");
  o.stateless = p.Has("stateless");
  o.dist = p.Get("dist");
  const bool int_dist = o.dist == "uniform_int" || o.dist == "uniform_full_int";
  if (!int_dist && o.dist != "uniform" && o.dist != "normal" && o.dist != "truncated_normal") {
    return Usage("--dist: unknown distribution '" + o.dist +
                 "'; use uniform, normal, truncated_normal, uniform_int or uniform_full_int");
  }
  const std::string dtype = p.Has("dtype") ? p.Get("dtype") : (int_dist ? "int64" : "float32");
  const bool dtype_ok = int_dist ? (dtype == "int32" || dtype == "int64")
                                 : (dtype == "float32" || dtype == "float64");
  if (!dtype_ok) {
    return Usage("--dtype: " + dtype + " is not supported for --dist " + o.dist + "; use " +
                 (int_dist ? "int32 or int64" : "float32 or float64"));
  }
  o.dtype = *DTypeFromName(dtype);
  Result<int64_t> count = p.GetInt("count");
  if (!count.ok()) return count.status();
  if (*count < 0) return Usage("--count must be >= 0, got " + std::to_string(*count));
  o.count = *count;
  if (p.Has("replica") || p.Has("replicas")) {
    if (o.stateless) {
      return Usage("--replica/--replicas apply to generators, not to --stateless ops");
    }
    if (!p.Has("replica") || !p.Has("replicas")) {
      return Usage("--replica K and --replicas R go together");
    }
    Result<int64_t> k = p.GetInt("replica"), r = p.GetInt("replicas");
    if (!k.ok()) return k.status();
    if (!r.ok()) return r.status();
    if (*r < 1) return Usage("--replicas must be >= 1, got " + std::to_string(*r));
    if (*k < 0 || *k >= *r) {
      return Usage("--replica must be in [0, " + std::to_string(*r) + "), got " +
                   std::to_string(*k));
    }
    o.replica = *k;
  }
  if (o.dist == "uniform_int") {
    if (!p.Has("min") || !p.Has("max")) return Usage("--dist uniform_int needs --min and --max");
    Result<int64_t> lo = p.GetInt("min"), hi = p.GetInt("max");
    if (!lo.ok()) return lo.status();
    if (!hi.ok()) return hi.status();
    if (o.dtype == DType::kInt32 &&
        (*lo != static_cast<int32_t>(*lo) || *hi != static_cast<int32_t>(*hi))) {
      return Usage("--min/--max must fit in int32 for --dtype int32");
    }
    if (*lo >= *hi) {
      return Usage("--min must be < --max for uniform_int, got " + std::to_string(*lo) +
                   " >= " + std::to_string(*hi));
    }
  } else if (o.dist != "uniform" && (p.Has("min") || p.Has("max"))) {
    return Usage("--min/--max only apply to --dist uniform and uniform_int");
  }
  o.min = p.Has("min") ? p.Get("min") : "0";
  o.max = p.Has("max") ? p.Get("max") : "1";
  if (o.dist == "uniform") {
    for (const std::string* v : {&o.min, &o.max}) {
      char* end = nullptr;
      std::strtod(v->c_str(), &end);
      if (v->empty() || *end != '\0') {
        return Usage(std::string(v == &o.min ? "--min" : "--max") + " must be a number, got '" +
                     *v + "'");
      }
    }
  }
  return o;
}

// Draws the numbers with either the Generator or the stateless ops.
Result<Tensor> Draw(const Options& o, const FlagParser& p) {
  const TensorShape shape{o.count};
  if (o.stateless) {
    TROUPE_ASSIGN_OR_RETURN(std::vector<int64_t> s, ParseIntList(o.seed, "--seed"));
    if (s.size() != 2) {
      return Usage("--seed: stateless ops take a seed of shape [2] (two integers A,B), got " +
                   std::to_string(s.size()) + " value(s) in '" + o.seed + "'");
    }
    TROUPE_ASSIGN_OR_RETURN(Tensor seed, random::MakeSeed(s[0], s[1], DType::kInt64));
    if (o.dist == "uniform") {
      return random::StatelessUniform(shape, seed, o.dtype, std::stod(o.min), std::stod(o.max),
                                      o.alg);
    }
    if (o.dist == "normal") return random::StatelessNormal(shape, seed, 0.0, 1.0, o.dtype, o.alg);
    if (o.dist == "truncated_normal") {
      return random::StatelessTruncatedNormal(shape, seed, 0.0, 1.0, o.dtype, o.alg);
    }
    if (o.dist == "uniform_full_int")
      return random::StatelessUniformFullInt(shape, seed, o.dtype, o.alg);
    TROUPE_ASSIGN_OR_RETURN(int64_t lo, p.GetInt("min"));
    TROUPE_ASSIGN_OR_RETURN(int64_t hi, p.GetInt("max"));
    return random::StatelessUniformInt(shape, seed, o.dtype, lo, hi, o.alg);
  }
  std::optional<Generator> gen;
  if (o.seed.find(',') != std::string::npos) {
    TROUPE_ASSIGN_OR_RETURN(std::vector<int64_t> list, ParseIntList(o.seed, "--seed"));
    TROUPE_ASSIGN_OR_RETURN(Generator g, Generator::FromSeedList(list, o.alg));
    gen.emplace(std::move(g));
  } else {
    Result<random::SeedInt> seed = random::SeedInt::Parse(o.seed);
    if (!seed.ok()) return Usage("--seed: " + seed.status().message());
    TROUPE_ASSIGN_OR_RETURN(Generator g, Generator::FromSeed(*seed, o.alg));
    gen.emplace(std::move(g));
  }
  Generator* g = &*gen;
  if (o.replica) g->set_replica_id(*o.replica);
  if (o.dist == "uniform") return g->Uniform(shape, std::stod(o.min), std::stod(o.max), o.dtype);
  if (o.dist == "normal") return g->Normal(shape, 0.0, 1.0, o.dtype);
  if (o.dist == "truncated_normal") return g->TruncatedNormal(shape, 0.0, 1.0, o.dtype);
  if (o.dist == "uniform_full_int") return g->UniformFullInt(shape, o.dtype);
  TROUPE_ASSIGN_OR_RETURN(int64_t lo, p.GetInt("min"));
  TROUPE_ASSIGN_OR_RETURN(int64_t hi, p.GetInt("max"));
  return g->UniformInt(shape, lo, hi, o.dtype);
}

void Print(const Tensor& t) {
  static char buffer[1 << 16];
  std::setvbuf(stdout, buffer, _IOFBF, sizeof(buffer));
  const int64_t n = t.num_elements();
  for (int64_t i = 0; i < n; ++i) {
    switch (t.dtype()) {
      case DType::kFloat32:
        std::printf("%.9g\n", static_cast<double>(t.data<float>()[i]));
        break;
      case DType::kFloat64:
        std::printf("%.17g\n", t.data<double>()[i]);
        break;
      case DType::kInt32:
        std::printf("%" PRId32 "\n", t.data<int32_t>()[i]);
        break;
      default:
        std::printf("%" PRId64 "\n", t.data<int64_t>()[i]);
        break;
    }
  }
  std::fflush(stdout);
}

int RunRng(int argc, char** argv) {
  FlagParser parser("troupe rng");
  parser.AddFlag("alg", "NAME", "philox (TF's CPU kernels) or threefry (TF under XLA)", "philox");
  parser.AddFlag("seed", "S", "integer seed; A,B with --stateless");
  parser.AddFlag("dist", "DIST",
                 "uniform, normal, truncated_normal, uniform_int, uniform_full_int");
  parser.AddFlag("dtype", "TYPE", "float32|float64 (floats) or int32|int64 (ints)");
  parser.AddFlag("min", "A", "lower bound for uniform (default 0) / uniform_int (required)");
  parser.AddFlag("max", "B", "upper bound, exclusive, for uniform (default 1) / uniform_int");
  parser.AddFlag("count", "N", "how many numbers (one draw of shape [N])");
  parser.AddFlag("replica", "K", "draw as replica K of a strategy with --replicas R");
  parser.AddFlag("replicas", "R", "number of replicas in the strategy");
  parser.AddFlag("stateless", "", "use tf.random.stateless_* instead of a Generator");
  Status s = parser.Parse(argc, argv);
  if (parser.help_requested()) {
    std::printf("%s%s", parser.Usage(kSynopsis).c_str(), kHelp);
    return kExitOk;
  }
  if (!s.ok()) {
    std::fprintf(stderr, "%s\n", s.message().c_str());
    return kExitUsage;
  }
  if (!parser.positional().empty()) {
    std::fprintf(stderr, "troupe rng: unexpected argument '%s' (see troupe rng --help)\n",
                 parser.positional()[0].c_str());
    return kExitUsage;
  }
  Result<Options> options = ReadOptions(parser);
  if (!options.ok()) {
    std::fprintf(stderr, "%s\n", options.status().message().c_str());
    return kExitUsage;
  }
  Result<Tensor> values = Draw(*options, parser);
  if (!values.ok()) {
    // Everything that can fail here is a bad argument (seed shape, range, dtype).
    const std::string& m = values.status().message();
    std::fprintf(stderr, "%s%s\n", m.rfind("troupe rng", 0) == 0 ? "" : "troupe rng: ", m.c_str());
    return kExitUsage;
  }
  Print(*values);
  return kExitOk;
}

}  // namespace
TROUPE_REGISTER_COMMAND("rng", "print random numbers bit-equal to TensorFlow's (philox/threefry)",
                        RunRng);
}  // namespace troupe::launch
