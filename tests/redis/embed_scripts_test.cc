// Copyright delayq authors.
//
// embed_scripts.sh, the build step that gives each Redis script the helpers
// it names: every required helper once, after what it requires; a loaded
// helper wrapped in a function of its own; a struct per script for its
// call, its members named by the header's lines; clear failures for an
// unknown helper, a cycle, a bad name, a misplaced "-- loads:" line, or a
// header whose keys or arguments are not declared as the build reads them
// (unnamed, named twice, out of order, the time out of its place).

#include <stdio.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/temp_path.h"

namespace delayq {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::string ScriptPath() {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const char* workspace = std::getenv("TEST_WORKSPACE");
  return absl::StrCat(srcdir ? srcdir : ".", "/",
                      workspace ? workspace : "delayq",
                      "/backends/redis/embed_scripts.sh");
}

struct Result {
  int exit_code = -1;
  std::string out;     // the generated source
  std::string header;  // the generated header of the calls
  std::string err;
};

// Writes `libs` (name -> text) into a fresh lib directory and `script` as
// op-1.lua (after a header line declaring its one key, `prefix`), runs the
// build step
// on them and returns what it made.
Result Embed(const std::map<std::string, std::string>& libs,
             const std::string& script) {
  const std::string dir = testing::MakeTempDir("embed");
  mkdir((dir + "/lib").c_str(), 0755);
  for (const auto& [name, text] : libs) {
    std::ofstream(absl::StrCat(dir, "/lib/", name, ".lua")) << text;
  }
  std::ofstream(dir + "/op-1.lua") << "-- KEYS[1]  prefix: key prefix\n"
                                   << script;
  const std::string command =
      absl::StrCat("bash ", ScriptPath(), " ", dir, "/out.cc ", dir, "/out.h ",
                   dir, "/lib ", dir, "/op-1.lua 2>", dir, "/err");
  Result r;
  const int status = std::system(command.c_str());
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::stringstream out, header, err;
  out << std::ifstream(dir + "/out.cc").rdbuf();
  header << std::ifstream(dir + "/out.h").rdbuf();
  err << std::ifstream(dir + "/err").rdbuf();
  r.out = out.str();
  r.header = header.str();
  r.err = err.str();
  return r;
}

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos;
       at = text.find(what, at + 1)) {
    ++n;
  }
  return n;
}

TEST(EmbedScriptsTest, RequiredHelpersComeOnceAfterWhatTheyRequire) {
  Result r =
      Embed({{"base", "local function base() end\n"},
             {"left", "-- requires: base\nlocal function left() end\n"},
             {"right", "-- requires: base\nlocal function right() end\n"},
             {"unused", "local function unused() end\n"}},
            "-- requires: left right base\nreturn 1\n");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Count(r.out, "local function base()"), 1u);
  EXPECT_LT(r.out.find("function base()"), r.out.find("function left()"));
  EXPECT_LT(r.out.find("function left()"), r.out.find("function right()"));
  EXPECT_LT(r.out.find("function right()"), r.out.find("return 1"));
  EXPECT_THAT(r.out, Not(HasSubstr("unused")));
  EXPECT_THAT(r.out, HasSubstr("{\"op\", 1, 0, false, R\"delayq_lua("));
}

TEST(EmbedScriptsTest, LoadedHelpersAreBuiltOnlyInsideTheirLoader) {
  Result r =
      Embed({{"base", "local function base() end\n"},
             {"shared", "local function shared() end\n"},
             {"one", "-- requires: base shared\nlocal function one() end\n"},
             {"two", "-- requires: shared\nlocal function two() end\n"}},
            "-- requires: base\n-- loads: one two\nreturn load_one().one\n");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // base is the script's own, so neither loader defines it again; shared
  // is defined inside each loader that needs it.
  EXPECT_EQ(Count(r.out, "local function base()"), 1u);
  EXPECT_EQ(Count(r.out, "local function shared()"), 2u);
  const size_t load_one = r.out.find("local function load_one()");
  const size_t load_two = r.out.find("local function load_two()");
  ASSERT_NE(load_one, std::string::npos);
  ASSERT_NE(load_two, std::string::npos);
  EXPECT_LT(r.out.find("local function base()"), load_one);
  EXPECT_LT(load_one, r.out.find("local function one()"));
  EXPECT_THAT(r.out, HasSubstr("return {one = one, }"));
  EXPECT_THAT(r.out, HasSubstr("return {two = two, }"));
}

// The table holds what the header declares: the keys, the arguments and
// whether a list follows them.
TEST(EmbedScriptsTest, TheHeaderDeclaresTheCall) {
  Result plain =
      Embed({}, "-- ARGV[1]  now: µs\n-- ARGV[2]  id: a job\nreturn 1\n");
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_THAT(plain.out, HasSubstr("{\"op\", 1, 2, false, R\"delayq_lua("));
  Result listed =
      Embed({}, "-- ARGV[1]  now: µs\n-- ARGV[2..] ids: job ids\nreturn 1\n");
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_THAT(listed.out, HasSubstr("{\"op\", 1, 1, true, R\"delayq_lua("));
}

// The generated header has a struct per script, a member per declared key
// and argument (the list an ArgList), and a ToCall() that lays them out in
// the declared order.
TEST(EmbedScriptsTest, EachScriptGetsAStructOfItsNamedKeysAndArguments) {
  Result r = Embed({},
                   "-- ARGV[1]  now: µs\n"
                   "-- ARGV[2]  clock_mode: whose clock, and how\n"
                   "--          far it may stray\n"
                   "-- ARGV[3]  id: the job's id\n"
                   "-- ARGV[4..] leases: id, token pairs\n"
                   "return 1\n");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string& h = r.header;
  EXPECT_THAT(h, HasSubstr("struct OpArgs {\n"
                           "  static constexpr char kScript[] = \"op\";\n"
                           "  std::optional<std::string> prefix;  // KEYS[1] "
                           "key prefix\n"));
  EXPECT_THAT(h, HasSubstr("std::optional<std::string> clock_mode;  // "
                           "ARGV[2] whose clock, and how far it may stray\n"));
  EXPECT_THAT(h, HasSubstr("ArgList leases;  // ARGV[4..] id, token pairs\n"));
  EXPECT_THAT(h, HasSubstr("inline absl::StatusOr<Scripts::Call> ToCall("
                           "OpArgs a) {\n"
                           "  CallBuilder call(OpArgs::kScript, 1, 3);\n"
                           "  call.Key(\"prefix\", &a.prefix);\n"
                           "  call.Arg(\"now\", &a.now);\n"
                           "  call.Arg(\"clock_mode\", &a.clock_mode);\n"
                           "  call.Arg(\"id\", &a.id);\n"
                           "  call.List(&a.leases);\n"
                           "  return std::move(call).Done();\n"
                           "}\n"));
}

TEST(EmbedScriptsTest, MistakesFailTheBuildNamingThem) {
  const struct {
    std::map<std::string, std::string> libs;
    std::string script;
    std::string says;
  } cases[] = {
      {{}, "-- requires: missing\n", "unknown helper 'missing'"},
      {{{"a", "-- requires: b\n"}, {"b", "-- requires: a\n"}},
       "-- requires: a\n",
       "cycle"},
      {{{"a-b", "local x = 1\n"}},
       "-- requires: a-b\n",
       "not a Lua identifier"},
      {{{"a", "-- loads: b\n"}, {"b", ""}},
       "-- requires: a\n",
       "only scripts may have a '-- loads:' line"},
      {{},
       "-- KEYS[2]  another: a key\n",
       "its name says 1 keys, its header declares 2"},
      {{}, "-- ARGV[2]  b: text\n", "ARGV[1] is not declared in order"},
      {{}, "-- KEYS[3]  other: a key\n", "KEYS[2] is not declared in order"},
      {{}, "-- ARGV[2..] ids: ids\n", "ARGV[1] is not declared in order"},
      // Every key and argument has a name, and no two the same.
      {{}, "-- ARGV[1]  the job's id\n", "ARGV[1] has no name"},
      {{}, "-- ARGV[1]  id the job's id\n", "ARGV[1] has no name"},
      {{}, "-- ARGV[1]  Id: the job's id\n", "ARGV[1] has no name"},
      {{}, "-- ARGV[1..] ids\n", "ARGV[1..] has no name"},
      {{},
       "-- ARGV[1]  id: a job\n-- ARGV[2]  id: another\n",
       "ARGV[1] and ARGV[2] are both named 'id'"},
      {{},
       "-- ARGV[1]  prefix: the prefix again\n",
       "KEYS[1] and ARGV[1] are both named 'prefix'"},
      {{},
       "-- ARGV[1]  now: µs\n-- ARGV[2..] now: more\n",
       "ARGV[1] and ARGV[2..] are both named 'now'"},
      // A list comes last; the time first.
      {{},
       "-- ARGV[1..] ids: ids\n-- ARGV[2]  max: most\n",
       "follows the list"},
      {{},
       "-- ARGV[1]  id: a job\n-- ARGV[2]  now: µs\n",
       "now is ARGV[2]; the time comes first"},
      {{},
       "-- ARGV[1]  now: µs\n-- ARGV[2]  id: a job\n"
       "-- ARGV[3]  clock_mode: whose\n",
       "clock_mode is ARGV[3]; it follows now"},
      {{},
       "-- ARGV[1]  id: a job\n-- ARGV[2]  clock_mode: whose\n",
       "clock_mode is ARGV[2]; it follows now"},
  };
  for (const auto& c : cases) {
    Result r = Embed(c.libs, c.script);
    EXPECT_NE(r.exit_code, 0) << c.script;
    EXPECT_THAT(r.err, HasSubstr(c.says)) << c.script;
  }
}

}  // namespace
}  // namespace delayq
