// Every TrainConfig field is read by the code that trains, not only parsed by launch/.
//
// Method (a source scan, so that it needs no training run): the fields are the member lines of
// `struct TrainConfig` in train/train_config.h. A member whose type is one of the libraries'
// spec structs (the optimizer recipe, its schedule, the data source spec, a feature) stands for
// that struct's fields, found in the library's header: `optimizer.schedule.decay_steps`,
// `data.image.key`. In each C++ file of the source tree outside launch/ and tests/, variables
// are found from their declarations (`const TrainConfig& config`, `const OptimizerConfig& c`).
// A field counts as read when some variable of the struct that holds it reads it
// (`c.learning_rate` with `c` an OptimizerConfig), or when a TrainConfig variable reads it by its
// whole path (`config.optimizer.learning_rate`). TrainConfig variables are gathered over every
// file (a struct's `TrainConfig config;` member is read as `p.config.seed` elsewhere); the spec
// structs' variables per file, where their short names (`c`, `s`) are declared and used. A field
// the trainer does not read yet must be listed below with the reason; the test also fails once
// a listed field is read, so the list only shrinks.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "launch/config_schema.h"

namespace {

namespace fs = std::filesystem;

// Fields not read outside launch/ yet, and why that is honest for now (none today).
const std::map<std::string, std::string> kNotReadYet = {};
// Fields no key sets.
const std::map<std::string, std::string> kNoKey = {
    {"data.image.dtype", "labels only: the image's type comes from its decode"},
    {"data.label.decode", "images only: a label is an int64_list or float_list"},
    {"data.label.scale", "images only"},
    {"data.label.offset", "images only"},
    {"data.seed", "job.seed, set when the source is opened"},
    {"data.options", "the values of keys a registered source declares without a field"},
    {"optimizer.options", "the values of keys a registered optimizer declares without a field"},
    {"model_options", "the values of keys a registered model declares (none in the zoo)"},
};
// Fields meant for launch/ itself.
const std::map<std::string, std::string> kReadByLaunch = {
    {"source_text", "written to <run_dir>/config.toml by launch/ (WriteConfigRecord)"},
};

// The spec structs a TrainConfig member may be, by the type name its declaration uses, with the
// header that declares them (relative to the source tree) and their unqualified name.
struct SpecStruct {
  std::string header;
  std::string name;
};
const std::map<std::string, SpecStruct> kSpecStructs = {
    {"nn::OptimizerConfig", {"graph/nn/optimizer_config.h", "OptimizerConfig"}},
    {"ScheduleConfig", {"graph/nn/schedules.h", "ScheduleConfig"}},
    {"input::DataSourceSpec", {"input/data_source.h", "DataSourceSpec"}},
    {"FeatureSpec", {"input/data_source.h", "FeatureSpec"}},
};

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

fs::path SourceDir() {
  const char* dir = std::getenv("TROUPE_SOURCE_DIR");
  return dir != nullptr ? fs::path(dir) : fs::path();
}

// (type, name) of each data member of `struct name` in `text` (member functions skipped).
std::vector<std::pair<std::string, std::string>> StructMembers(const std::string& text,
                                                               const std::string& name) {
  // `type name;`, `type name = value;` or `type name{values};`; the type may be a template.
  static const std::regex member(R"(^\s+([\w:]+(<[\w:, ]*>)?)\s+(\w+)\s*(=[^;]*|\{[^;]*\})?;)");
  std::istringstream lines(text);
  std::vector<std::pair<std::string, std::string>> members;
  bool inside = false;
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("struct " + name + " {", 0) == 0) inside = true;
    if (!inside) continue;
    if (line.rfind("};", 0) == 0) break;
    std::smatch m;
    if (std::regex_search(line, m, member)) members.emplace_back(m[1], m[3]);
  }
  return members;
}

// A field: its path from TrainConfig ("optimizer.schedule.alpha"), and how each struct on the
// way reaches it: {TrainConfig, "optimizer.schedule.alpha"}, {OptimizerConfig,
// "schedule.alpha"}, {ScheduleConfig, "alpha"}; `own_use` when the struct holding it reads it
// in one of its own inline member functions (OptimizerConfig::Beta2() reads beta_2).
struct Field {
  std::string path;
  std::vector<std::pair<std::string, std::string>> reached_from;
  bool own_use = false;
};

// Whether `name` appears in the body of `struct holder` (in `text`) other than where it is
// declared: a read by the struct's own inline member functions. Comments do not count.
bool UsedByItsStruct(const std::string& text, const std::string& holder, const std::string& name) {
  std::istringstream lines(text);
  bool inside = false;
  int uses = 0;
  const std::regex word("\\b" + name + "\\b");
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("struct " + holder + " {", 0) == 0) inside = true;
    if (!inside) continue;
    if (line.rfind("};", 0) == 0) break;
    const std::string code = line.substr(0, line.find("//"));
    uses += static_cast<int>(std::distance(std::sregex_iterator(code.begin(), code.end(), word),
                                           std::sregex_iterator()));
  }
  return uses > 1;
}

// Adds the fields of `holder`'s `members` (read from `text`), reached from the structs of `via`
// by the paths there plus `.name`.
void AddFields(const std::string& holder, const std::string& text,
               const std::vector<std::pair<std::string, std::string>>& via,
               std::vector<Field>* out) {
  for (const auto& [type, name] : StructMembers(text, holder)) {
    std::vector<std::pair<std::string, std::string>> reached = via;
    for (auto& [from, path] : reached) path += "." + name;
    reached.emplace_back(holder, name);
    auto spec = kSpecStructs.find(type);
    if (spec == kSpecStructs.end()) {
      out->push_back({reached.front().second, reached, UsedByItsStruct(text, holder, name)});
      continue;
    }
    const SpecStruct& s = spec->second;
    AddFields(s.name, ReadFile(SourceDir() / s.header), reached, out);
  }
}

std::vector<Field> TrainConfigFields() {
  std::vector<Field> fields;
  AddFields("TrainConfig", ReadFile(SourceDir() / "train" / "train_config.h"), {}, &fields);
  return fields;
}

// Names of variables (and members) of struct `type` declared in `text`.
std::set<std::string> VariablesOf(const std::string& text, const std::string& type) {
  const std::regex declared(R"(\b)" + type + R"(\s*[&*]?\s*(\w+)\s*[,;)={])");
  std::set<std::string> names;
  for (std::sregex_iterator it(text.begin(), text.end(), declared), end; it != end; ++it) {
    names.insert((*it)[1]);
  }
  return names;
}

// Paths read through variables named `names` in `text`: `name.a` gives "a", `name.a.b` also
// "a.b", `name.a.b.c` also "a.b.c" (a method call after a path, `name.a.size()`, reads "a").
// With `members`, `x.name.a` counts too (`p.config.seed`: a TrainConfig member of a struct);
// without, only a variable itself (`c.data.label` is no read through a variable named `label`).
std::set<std::string> PathsRead(const std::string& text, const std::set<std::string>& names,
                                bool members = true) {
  std::set<std::string> paths;
  for (const std::string& name : names) {
    // Not preceded by `.` or `->`: `c.data.label` is no read through a variable named `label`.
    const std::regex use(
        std::string(members ? "(\\b)" : "(^|[^.>\\w])") + name +
        R"(\s*(\.|->)\s*(\w+)(\s*\.\s*(\w+)\b(?!\s*\())?(\s*\.\s*(\w+)\b(?!\s*\())?)");
    for (std::sregex_iterator it(text.begin(), text.end(), use), end; it != end; ++it) {
      std::string path = (*it)[3].str();
      paths.insert(path);
      for (int g : {5, 7}) {
        if (!(*it)[g].matched) break;
        path += "." + (*it)[g].str();
        paths.insert(path);
      }
    }
  }
  return paths;
}

bool IsSource(const fs::path& p) {
  const std::string ext = p.extension().string();
  return ext == ".cc" || ext == ".h" || ext == ".cu";
}

// What the code under the top-level folders `keep` accepts reads: by struct, the paths read
// through its variables.
struct Reads {
  std::map<std::string, std::set<std::string>> by_struct;

  bool Has(const Field& f) const {
    if (f.own_use) return true;
    for (const auto& [holder, path] : f.reached_from) {
      auto it = by_struct.find(holder);
      if (it != by_struct.end() && it->second.count(path) > 0) return true;
    }
    return false;
  }
};

template <class Keep>
Reads ReadsUnder(Keep keep) {
  std::vector<std::string> texts;
  for (const auto& top : fs::directory_iterator(SourceDir())) {
    const std::string name = top.path().filename().string();
    if (!top.is_directory() || name.empty() || name[0] == '.' || name.rfind("build", 0) == 0 ||
        !keep(name)) {
      continue;
    }
    for (const auto& entry : fs::recursive_directory_iterator(top.path())) {
      if (entry.is_regular_file() && IsSource(entry.path())) {
        texts.push_back(ReadFile(entry.path()));
      }
    }
  }
  Reads read;
  std::set<std::string> config_names;
  for (const std::string& text : texts) {
    for (const std::string& n : VariablesOf(text, "TrainConfig")) config_names.insert(n);
  }
  for (const std::string& text : texts) {
    for (const std::string& p : PathsRead(text, config_names))
      read.by_struct["TrainConfig"].insert(p);
    for (const auto& [type, spec] : kSpecStructs) {
      for (const std::string& p : PathsRead(text, VariablesOf(text, spec.name), false)) {
        read.by_struct[spec.name].insert(p);
      }
    }
  }
  return read;
}

TEST(ConfigFieldsTest, EveryFieldIsReadOutsideLaunch) {
  ASSERT_FALSE(SourceDir().empty()) << "TROUPE_SOURCE_DIR is not set";
  const std::vector<Field> fields = TrainConfigFields();
  std::set<std::string> paths;
  for (const Field& f : fields) paths.insert(f.path);
  ASSERT_GE(fields.size(), 30u) << "train/train_config.h no longer parses as expected";
  ASSERT_TRUE(paths.count("seed") && paths.count("source_text") && paths.count("resize"));
  ASSERT_TRUE(paths.count("data.image.shape") && paths.count("data.label.dtype"));
  ASSERT_TRUE(paths.count("optimizer.learning_rate") &&
              paths.count("optimizer.schedule.decay_steps"));
  EXPECT_FALSE(paths.count("data") || paths.count("optimizer") || paths.count("key"));
  // Every field but those launch/ keeps for itself and those no key sets is some key's.
  for (const auto& [field, why] : kNoKey) EXPECT_TRUE(paths.count(field)) << field;
  EXPECT_EQ(troupe::launch::ConfigSchema().size() + kReadByLaunch.size() + kNoKey.size(),
            fields.size());
  const Reads read =
      ReadsUnder([](const std::string& top) { return top != "launch" && top != "tests"; });
  for (const Field& field : fields) {
    if (kNoKey.count(field.path)) continue;
    if (kNotReadYet.count(field.path)) {
      EXPECT_FALSE(read.Has(field)) << field.path << " is read now: remove it from kNotReadYet";
    } else if (!kReadByLaunch.count(field.path)) {
      EXPECT_TRUE(read.Has(field))
          << "TrainConfig::" << field.path << " is parsed but nothing outside launch/ reads it";
    }
  }
  const Reads launch_reads = ReadsUnder([](const std::string& top) { return top == "launch"; });
  for (const auto& [path, why] : kReadByLaunch) {
    EXPECT_TRUE(launch_reads.Has(Field{path, {{"TrainConfig", path}}})) << path << ": " << why;
  }
}

// The scan itself: declarations found, member accesses through them counted, others not.
TEST(ConfigFieldsTest, ScanFindsAccessesThroughDeclaredVariables) {
  const std::string code =
      "int F(const TrainConfig& c, const Other& o) { return c.seed + o.epochs; }\n"
      "void G(const train::TrainConfig &config) { Use(config.run_dir, p->x); }\n";
  EXPECT_EQ(PathsRead(code, VariablesOf(code, "TrainConfig")),
            (std::set<std::string>{"run_dir", "seed"}));
  // Paths: every prefix of a path is read; a method call ends it.
  const std::string nested =
      "void H(const TrainConfig& c) { Use(c.data.image.key, c.data.label.shape.size()); }\n"
      "void I(const input::FeatureSpec& label) { Use(label.dtype); }\n";
  EXPECT_EQ(PathsRead(nested, VariablesOf(nested, "TrainConfig")),
            (std::set<std::string>{"data", "data.image", "data.image.key", "data.label",
                                   "data.label.shape"}));
  EXPECT_EQ(PathsRead(nested, VariablesOf(nested, "FeatureSpec"), false),
            (std::set<std::string>{"dtype"}));
  Reads read;
  read.by_struct["TrainConfig"] = PathsRead(nested, VariablesOf(nested, "TrainConfig"));
  read.by_struct["FeatureSpec"] = PathsRead(nested, VariablesOf(nested, "FeatureSpec"), false);
  auto field = [](const std::string& path, const std::string& name) {
    return Field{path, {{"TrainConfig", path}, {"FeatureSpec", name}}};
  };
  EXPECT_TRUE(read.Has(field("data.image.key", "key")));      // by its path
  EXPECT_TRUE(read.Has(field("data.label.dtype", "dtype")));  // through a FeatureSpec
  EXPECT_FALSE(read.Has(field("data.label.offset", "offset")));
}

}  // namespace
