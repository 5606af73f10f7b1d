// Every TrainConfig field is read by the code that trains, not only parsed by launch/.
//
// Method (a source scan, so that it needs no training run): the fields are the member lines of
// `struct TrainConfig` in actors/train_config.h; a member whose type is a struct nested in it
// (`Feature image_feature`) stands for that struct's fields, `image_feature.key` and so on. In
// each C++ file of the source tree outside launch/ and tests/, the names of TrainConfig
// variables are found from their declarations (`const TrainConfig& config`, `TrainConfig c;`),
// and a field counts as read when it appears as `<one of those names>.field` or `->field`. A
// nested field `image_feature.key` counts as read when it appears as
// `<name>.image_feature.key`, or when `<name>.image_feature` is read whole and `key` is read
// through a `TrainConfig::Feature` variable. A field the trainer does not read yet must be
// listed below with the reason; the test also fails once a listed field is read, so the list
// only shrinks.
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
// Nested fields no key sets: a Feature's members that only the other Feature uses.
const std::map<std::string, std::string> kNoKey = {
    {"image_feature.dtype", "labels only: the image's type comes from its decode"},
    {"label_feature.decode", "images only: a label is an int64_list or float_list"},
    {"label_feature.scale", "images only"},
    {"label_feature.offset", "images only"},
};
// Fields meant for launch/ itself.
const std::map<std::string, std::string> kReadByLaunch = {
    {"source_text", "written to <run_dir>/config.toml by launch/ (WriteConfigRecord)"},
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

// The fields of `struct TrainConfig`: its members, and "member.field" for each field of a
// member whose type is a struct declared inside TrainConfig.
std::set<std::string> TrainConfigFields() {
  std::istringstream header(ReadFile(SourceDir() / "actors" / "train_config.h"));
  // `type name;`, `type name = value;` or `type name{values};`; the type may be a template.
  static const std::regex member(R"(^\s+([\w:]+(<[\w:, ]*>)?)\s+(\w+)\s*(=[^;]*|\{[^;]*\})?;)");
  static const std::regex nested_begin(R"(^\s+struct\s+(\w+)\s*\{)");
  std::map<std::string, std::vector<std::string>> nested;    // struct -> its fields
  std::vector<std::pair<std::string, std::string>> members;  // (type, name)
  bool inside = false;
  std::string in_nested;
  for (std::string line; std::getline(header, line);) {
    if (line.rfind("struct TrainConfig", 0) == 0) inside = true;
    if (inside && line.rfind("};", 0) == 0) break;
    if (!inside) continue;
    std::smatch m;
    if (std::regex_search(line, m, nested_begin)) {
      in_nested = m[1];
      nested[in_nested];
    } else if (!in_nested.empty() && std::regex_search(line, std::regex(R"(^\s+\};)"))) {
      in_nested.clear();
    } else if (std::regex_search(line, m, member)) {
      if (in_nested.empty()) {
        members.emplace_back(m[1], m[3]);
      } else {
        nested[in_nested].push_back(m[3]);
      }
    }
  }
  std::set<std::string> fields;
  for (const auto& [type, name] : members) {
    auto it = nested.find(type);
    if (it == nested.end()) {
      fields.insert(name);
      continue;
    }
    for (const std::string& field : it->second) fields.insert(name + "." + field);
  }
  return fields;
}

// Names of TrainConfig variables and members declared in `text`.
std::set<std::string> TrainConfigNames(const std::string& text) {
  static const std::regex declared(R"(\bTrainConfig\s*[&*]?\s*(\w+)\s*[,;)={])");
  std::set<std::string> names;
  for (std::sregex_iterator it(text.begin(), text.end(), declared), end; it != end; ++it) {
    names.insert((*it)[1]);
  }
  return names;
}

// Names of TrainConfig::Feature variables declared in `text`.
std::set<std::string> FeatureNames(const std::string& text) {
  static const std::regex declared(R"(\bTrainConfig::Feature\s*[&*]?\s*(\w+)\s*[,;)={])");
  std::set<std::string> names;
  for (std::sregex_iterator it(text.begin(), text.end(), declared), end; it != end; ++it) {
    names.insert((*it)[1]);
  }
  return names;
}

// Fields accessed through variables named `names` in `text`: "field" for `name.field` (or
// `name.field.method(`), "field.sub" for `name.field.sub`.
std::set<std::string> FieldsRead(const std::string& text, const std::set<std::string>& names) {
  std::set<std::string> fields;
  for (const std::string& name : names) {
    const std::regex use("\\b" + name + R"(\s*(\.|->)\s*(\w+)(\s*\.\s*(\w+)(\s*\()?)?)");
    for (std::sregex_iterator it(text.begin(), text.end(), use), end; it != end; ++it) {
      const bool path = (*it)[4].matched && !(*it)[5].matched;
      fields.insert(path ? (*it)[2].str() + "." + (*it)[4].str() : (*it)[2].str());
    }
  }
  return fields;
}

// Fields accessed through TrainConfig variables declared in `text`.
std::set<std::string> FieldsRead(const std::string& text) {
  return FieldsRead(text, TrainConfigNames(text));
}

// Whether `field` counts as read, given the fields read through TrainConfig variables and
// the Feature fields read through TrainConfig::Feature variables.
bool IsRead(const std::string& field, const std::set<std::string>& read,
            const std::set<std::string>& feature_read) {
  if (read.count(field)) return true;
  const size_t dot = field.find('.');
  if (dot == std::string::npos) {  // `c.data_files.size`: a member's member is still a read
    auto it = read.lower_bound(field + ".");
    return it != read.end() && it->rfind(field + ".", 0) == 0;
  }
  return read.count(field.substr(0, dot)) && feature_read.count(field.substr(dot + 1));
}

bool IsSource(const fs::path& p) {
  const std::string ext = p.extension().string();
  return ext == ".cc" || ext == ".h" || ext == ".cu";
}

struct Reads {
  std::set<std::string> fields;          // through TrainConfig variables
  std::set<std::string> feature_fields;  // through TrainConfig::Feature variables

  bool Has(const std::string& field) const { return IsRead(field, fields, feature_fields); }
};

// Fields read in the top-level folders `keep` accepts. A TrainConfig member declared in one
// file (a struct's `TrainConfig config;`) is read in others (`p.config.seed`), so names are
// gathered over every file first.
template <class Keep>
Reads FieldsReadUnder(Keep keep) {
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
  std::set<std::string> names, feature_names;
  for (const std::string& text : texts) {
    for (const std::string& n : TrainConfigNames(text)) names.insert(n);
    for (const std::string& n : FeatureNames(text)) feature_names.insert(n);
  }
  Reads read;
  for (const std::string& text : texts) {
    for (const std::string& f : FieldsRead(text, names)) read.fields.insert(f);
    for (const std::string& f : FieldsRead(text, feature_names)) read.feature_fields.insert(f);
  }
  return read;
}

TEST(ConfigFieldsTest, EveryFieldIsReadOutsideLaunch) {
  ASSERT_FALSE(SourceDir().empty()) << "TROUPE_SOURCE_DIR is not set";
  const std::set<std::string> fields = TrainConfigFields();
  ASSERT_GE(fields.size(), 30u) << "actors/train_config.h no longer parses as expected";
  ASSERT_TRUE(fields.count("seed") && fields.count("source_text") && fields.count("resize"));
  ASSERT_TRUE(fields.count("image_feature.shape") && fields.count("label_feature.dtype"));
  EXPECT_FALSE(fields.count("image_feature") || fields.count("key") || fields.count("scale"));
  // Every field but those launch/ keeps for itself and the Feature members no key sets is
  // some key's.
  for (const auto& [field, why] : kNoKey) EXPECT_TRUE(fields.count(field)) << field;
  EXPECT_EQ(troupe::launch::ConfigSchema().size() + kReadByLaunch.size() + kNoKey.size(),
            fields.size());
  const Reads read =
      FieldsReadUnder([](const std::string& top) { return top != "launch" && top != "tests"; });
  for (const std::string& field : fields) {
    if (kNoKey.count(field)) continue;
    if (kNotReadYet.count(field)) {
      EXPECT_FALSE(read.Has(field)) << field << " is read now: remove it from kNotReadYet";
    } else if (!kReadByLaunch.count(field)) {
      EXPECT_TRUE(read.Has(field))
          << "TrainConfig::" << field << " is parsed but nothing outside launch/ reads it";
    }
  }
  const Reads launch_reads =
      FieldsReadUnder([](const std::string& top) { return top == "launch"; });
  for (const auto& [field, why] : kReadByLaunch) {
    EXPECT_TRUE(launch_reads.Has(field)) << field << ": " << why;
  }
}

// The scan itself: declarations found, member accesses through them counted, others not.
TEST(ConfigFieldsTest, ScanFindsAccessesThroughTrainConfigVariables) {
  const std::string code =
      "int F(const TrainConfig& c, const Other& o) { return c.seed + o.epochs; }\n"
      "void G(const actors::TrainConfig &config) { Use(config.run_dir, p->x); }\n";
  EXPECT_EQ(FieldsRead(code), (std::set<std::string>{"run_dir", "seed"}));
  // Nested fields: read by path, or whole and then through a Feature variable.
  const std::string nested =
      "void H(const TrainConfig& c) { Use(c.image_feature.key, c.label_feature, "
      "c.run_dir.c_str()); }\n"
      "void I(const actors::TrainConfig::Feature& label) { Use(label.dtype); }\n";
  const std::set<std::string> read = FieldsRead(nested);
  EXPECT_EQ(read, (std::set<std::string>{"image_feature.key", "label_feature", "run_dir"}));
  const std::set<std::string> feature_read = FieldsRead(nested, FeatureNames(nested));
  EXPECT_EQ(feature_read, (std::set<std::string>{"dtype"}));
  EXPECT_TRUE(IsRead("image_feature.key", read, feature_read));
  EXPECT_TRUE(IsRead("label_feature.dtype", read, feature_read));
  EXPECT_FALSE(IsRead("label_feature.key", read, feature_read));
  EXPECT_FALSE(IsRead("image_feature.dtype", read, feature_read));  // image_feature: by path only
}

}  // namespace
