// Every TrainConfig field is read by the code that trains, not only parsed by launch/.
//
// Method (a source scan, so that it needs no training run): the fields are the member lines of
// `struct TrainConfig` in actors/train_config.h. In each C++ file of the source tree outside
// launch/ and tests/, the names of TrainConfig variables are found from their declarations
// (`const TrainConfig& config`, `TrainConfig c;`), and a field counts as read when it appears
// as `<one of those names>.field` or `->field`. A field the trainer does not read yet must be
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

// Fields not read outside launch/ yet, and why that is honest for now.
const std::map<std::string, std::string> kNotReadYet = {};
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

std::set<std::string> TrainConfigFields() {
  std::istringstream header(ReadFile(SourceDir() / "actors" / "train_config.h"));
  static const std::regex member(R"(^\s+[\w:]+\s+(\w+)\s*(=[^;]*)?;)");
  std::set<std::string> fields;
  bool inside = false;
  for (std::string line; std::getline(header, line);) {
    if (line.rfind("struct TrainConfig", 0) == 0) inside = true;
    if (inside && line.rfind("};", 0) == 0) break;
    std::smatch m;
    if (inside && std::regex_search(line, m, member)) fields.insert(m[1]);
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

// Fields accessed through variables named `names` in `text`.
std::set<std::string> FieldsRead(const std::string& text, const std::set<std::string>& names) {
  std::set<std::string> fields;
  for (const std::string& name : names) {
    const std::regex use("\\b" + name + R"(\s*(\.|->)\s*(\w+))");
    for (std::sregex_iterator it(text.begin(), text.end(), use), end; it != end; ++it) {
      fields.insert((*it)[2]);
    }
  }
  return fields;
}

// Fields accessed through TrainConfig variables declared in `text`.
std::set<std::string> FieldsRead(const std::string& text) {
  return FieldsRead(text, TrainConfigNames(text));
}

bool IsSource(const fs::path& p) {
  const std::string ext = p.extension().string();
  return ext == ".cc" || ext == ".h" || ext == ".cu";
}

// Fields read in the top-level folders `keep` accepts. A TrainConfig member declared in one
// file (a struct's `TrainConfig config;`) is read in others (`p.config.seed`), so names are
// gathered over every file first.
template <class Keep>
std::set<std::string> FieldsReadUnder(Keep keep) {
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
  std::set<std::string> names;
  for (const std::string& text : texts) {
    for (const std::string& n : TrainConfigNames(text)) names.insert(n);
  }
  std::set<std::string> read;
  for (const std::string& text : texts) {
    for (const std::string& f : FieldsRead(text, names)) read.insert(f);
  }
  return read;
}

TEST(ConfigFieldsTest, EveryFieldIsReadOutsideLaunch) {
  ASSERT_FALSE(SourceDir().empty()) << "TROUPE_SOURCE_DIR is not set";
  const std::set<std::string> fields = TrainConfigFields();
  ASSERT_GE(fields.size(), 30u) << "actors/train_config.h no longer parses as expected";
  ASSERT_TRUE(fields.count("seed") && fields.count("source_text"));
  // Every field but those launch/ keeps for itself is some key's.
  EXPECT_EQ(troupe::launch::ConfigSchema().size() + kReadByLaunch.size(), fields.size());
  const std::set<std::string> read =
      FieldsReadUnder([](const std::string& top) { return top != "launch" && top != "tests"; });
  for (const std::string& field : fields) {
    if (kNotReadYet.count(field)) {
      EXPECT_FALSE(read.count(field)) << field << " is read now: remove it from kNotReadYet";
    } else if (!kReadByLaunch.count(field)) {
      EXPECT_TRUE(read.count(field))
          << "TrainConfig::" << field << " is parsed but nothing outside launch/ reads it";
    }
  }
  const std::set<std::string> launch_reads =
      FieldsReadUnder([](const std::string& top) { return top == "launch"; });
  for (const auto& [field, why] : kReadByLaunch) {
    EXPECT_TRUE(launch_reads.count(field)) << field << ": " << why;
  }
}

// The scan itself: declarations found, member accesses through them counted, others not.
TEST(ConfigFieldsTest, ScanFindsAccessesThroughTrainConfigVariables) {
  const std::string code =
      "int F(const TrainConfig& c, const Other& o) { return c.seed + o.epochs; }\n"
      "void G(const actors::TrainConfig &config) { Use(config.run_dir, p->x); }\n";
  EXPECT_EQ(FieldsRead(code), (std::set<std::string>{"run_dir", "seed"}));
}

}  // namespace
