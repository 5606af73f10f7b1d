#include "launch/flags.h"

#include <gtest/gtest.h>

namespace troupe::launch {
namespace {

Status ParseArgs(FlagParser& p, std::vector<std::string> args) {
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  return p.Parse(static_cast<int>(argv.size()), argv.data());
}

FlagParser MakeParser() {
  FlagParser p("troupe test");
  p.AddFlag("count", "N", "how many", "10");
  p.AddFlag("alg", "NAME", "algorithm");
  p.AddFlag("stateless", "", "switch");
  p.AddRepeatedFlag("set", "KEY=VALUE", "override");
  return p;
}

TEST(FlagParserTest, ParsesFormsAndDefaults) {
  FlagParser p = MakeParser();
  ASSERT_TRUE(ParseArgs(p, {"x", "--alg=philox", "--stateless", "pos", "--set", "a=1", "--set",
                            "b=2", "--count", "-5"})
                  .ok());
  EXPECT_EQ(p.Get("alg"), "philox");
  EXPECT_EQ(p.Get("stateless"), "true");
  EXPECT_EQ(*p.GetInt("count"), -5);
  EXPECT_EQ(p.GetAll("set"), (std::vector<std::string>{"a=1", "b=2"}));
  EXPECT_EQ(p.positional(), (std::vector<std::string>{"pos"}));
  FlagParser q = MakeParser();
  ASSERT_TRUE(ParseArgs(q, {"x"}).ok());
  EXPECT_EQ(*q.GetInt("count"), 10);
  EXPECT_FALSE(q.Has("alg"));
}

TEST(FlagParserTest, ErrorsNameTheFlag) {
  FlagParser p = MakeParser();
  Status s = ParseArgs(p, {"x", "--bogus", "1"});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("--bogus"), std::string::npos);
  FlagParser q = MakeParser();
  s = ParseArgs(q, {"x", "--alg"});
  EXPECT_NE(s.message().find("--alg needs a value"), std::string::npos);
  FlagParser r = MakeParser();
  ASSERT_TRUE(ParseArgs(r, {"x", "--count", "ten"}).ok());
  EXPECT_NE(r.GetInt("count").status().message().find("--count must be an integer"),
            std::string::npos);
  FlagParser t = MakeParser();
  EXPECT_FALSE(ParseArgs(t, {"x", "--alg", "a", "--alg", "b"}).ok());
}

TEST(FlagParserTest, DashHIsHelpUntilDoubleDash) {
  for (const char* help : {"-h", "--help"}) {
    FlagParser p = MakeParser();
    EXPECT_TRUE(ParseArgs(p, {"x", "pos", help}).ok()) << help;
    EXPECT_TRUE(p.help_requested()) << help;
    EXPECT_TRUE(p.positional() == std::vector<std::string>{"pos"}) << help;
    // After `--` it belongs to the wrapped command (troupe supervise -- cmd -h).
    FlagParser q = MakeParser();
    ASSERT_TRUE(ParseArgs(q, {"x", "--", "cmd", help}).ok()) << help;
    EXPECT_FALSE(q.help_requested()) << help;
    EXPECT_EQ(q.positional(), (std::vector<std::string>{"cmd", help}));
  }
}

TEST(FlagParserTest, UsageListsFlags) {
  FlagParser p = MakeParser();
  std::string usage = p.Usage("troupe test [flags]");
  EXPECT_NE(usage.find("--count N"), std::string::npos);
  EXPECT_NE(usage.find("(default: 10)"), std::string::npos);
  EXPECT_NE(usage.find("-h, --help"), std::string::npos);
}

}  // namespace
}  // namespace troupe::launch
