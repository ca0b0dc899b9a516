// Copyright delayq authors.
//
// The C++ side of the Redis store and its Lua scripts spell the key layout
// and the reply layouts each in their own language. These tests hold the two
// together: the keys C++ builds against keys.lua evaluated on a real server,
// and the reply words and field orders C++ reads against the scripts'
// "-- Reply:" headers and lib/snapshot.lua.

#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "backends/redis/internal/keys.h"
#include "backends/redis/internal/replies.h"
#include "backends/redis/internal/scripts.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/redis/redis_test_server.h"

namespace delayq {
namespace {

using redis_internal::KeyLayout;
using ::testing::ElementsAreArray;

std::string ScriptDir() {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const char* workspace = std::getenv("TEST_WORKSPACE");
  return absl::StrCat(srcdir ? srcdir : ".", "/",
                      workspace ? workspace : "delayq",
                      "/backends/redis/scripts");
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The embedded source of `name` (helpers included), as the server runs it.
std::string ScriptBody(absl::string_view name) {
  for (int i = 0; i < redis_internal::kScriptSourceCount; ++i) {
    if (name == redis_internal::kScriptSources[i].name) {
      return redis_internal::kScriptSources[i].body;
    }
  }
  return "";
}

TEST(KeyLayoutTest, EveryKeyIsTheOneKeysLuaSpells) {
  const std::string keys_lua = ReadFile(ScriptDir() + "/lib/keys.lua");
  ASSERT_FALSE(keys_lua.empty()) << "cannot read keys.lua";
  const std::string probe = keys_lua + R"lua(
return {job_key(ARGV[1]), ready_key(ARGV[2]), dead_key(ARGV[2]),
        tdelayed_key(ARGV[2]), treserved_key(ARGV[2]), bucket_key(ARGV[3]),
        RESERVED, TOPICS, SEQ, HORIZON, META, NEWS}
)lua";
  const std::string ns = "layout-ns";
  const KeyLayout keys(ns);
  const std::vector<std::string> from_lua = testing::RawCommand(
      testing::SharedRedisServer().port(),
      {"EVAL", probe, "1", keys.prefix(), "id:1", "topic.a", "7"});
  const std::vector<std::string> from_cpp = {keys.Job("id:1"),
                                             keys.Ready("topic.a"),
                                             keys.Dead("topic.a"),
                                             keys.TopicDelayed("topic.a"),
                                             keys.TopicReserved("topic.a"),
                                             keys.DelayBucket(7),
                                             keys.Reserved(),
                                             keys.Topics(),
                                             keys.Seq(),
                                             keys.Horizon(),
                                             keys.Meta(),
                                             keys.NewsChannel()};
  EXPECT_EQ(from_lua, from_cpp);
  EXPECT_EQ(keys.prefix(), "{layout-ns}:");
}

// The "-- Reply:" block of a script's header: the Reply line and the
// indented lines that continue it.
std::string ReplyHeader(const std::string& source) {
  std::string block;
  bool in = false;
  for (absl::string_view line : absl::StrSplit(source, '\n')) {
    if (absl::StartsWith(line, "-- Reply:")) {
      in = true;
    } else if (in && !absl::StartsWith(line, "--          ")) {
      break;
    }
    if (in) absl::StrAppend(&block, line, "\n");
  }
  return block;
}

// The status words a header lists: each `{"WORD"` in it.
std::set<std::string> WordsIn(const std::string& header) {
  std::set<std::string> words;
  static const std::regex word(R"re(\{"([A-Z_]+)")re");
  for (std::sregex_iterator it(header.begin(), header.end(), word), end;
       it != end; ++it) {
    words.insert((*it)[1]);
  }
  return words;
}

TEST(ReplyLayoutTest, EveryScriptRepliesWithTheWordsTheStoreReads) {
  std::set<std::string> scripts_known;
  for (const redis_internal::ScriptWords& s : redis_internal::ReplyWords()) {
    scripts_known.insert(s.script);
    const std::string body = ScriptBody(s.script);
    ASSERT_FALSE(body.empty()) << "no embedded script " << s.script;
    std::set<std::string> expected(s.words.begin(), s.words.end());
    EXPECT_EQ(WordsIn(ReplyHeader(body)), expected) << s.script;
  }
  std::set<std::string> embedded;
  for (int i = 0; i < redis_internal::kScriptSourceCount; ++i) {
    embedded.insert(redis_internal::kScriptSources[i].name);
  }
  EXPECT_EQ(scripts_known, embedded)
      << "every script needs its reply words listed in replies.cc";
}

// The names between the first '{' after `after` and its '}', split at
// commas.
std::vector<std::string> FieldList(const std::string& text,
                                   absl::string_view after) {
  const size_t at = text.find(std::string(after));
  if (at == std::string::npos) return {};
  const size_t open = text.find('{', at);
  const size_t close = text.find('}', open);
  std::string inner = text.substr(open + 1, close - open - 1);
  std::vector<std::string> names;
  for (absl::string_view part : absl::StrSplit(inner, ',')) {
    std::string name(absl::StripAsciiWhitespace(part));
    name.erase(std::remove(name.begin(), name.end(), '\''), name.end());
    name.erase(std::remove(name.begin(), name.end(), '-'), name.end());
    names.push_back(std::string(absl::StripAsciiWhitespace(name)));
  }
  return names;
}

TEST(ReplyLayoutTest, SnapshotFieldsAreInTheOrderSnapshotLuaSends) {
  const std::string lua = ReadFile(ScriptDir() + "/lib/snapshot.lua");
  std::vector<std::string> expected = {"id"};
  for (const std::string& f : FieldList(lua, "SNAPSHOT_FIELDS =")) {
    expected.push_back(f);
  }
  EXPECT_THAT(redis_internal::kSnapshotFields, ElementsAreArray(expected));
}

TEST(ReplyLayoutTest, LeaseFieldsAreInTheOrderReserveSends) {
  const std::string header = ReplyHeader(ScriptBody("reserve"));
  EXPECT_THAT(redis_internal::kLeaseFields,
              ElementsAreArray(FieldList(header, "one entry per lease")));
}

TEST(ReplyLayoutTest, TransitionFieldsAreInTheOrderPromoteDueSends) {
  const std::string header = ReplyHeader(ScriptBody("promote_due"));
  EXPECT_THAT(redis_internal::kTransitionFields,
              ElementsAreArray(FieldList(header, "more (0/1),")));
}

}  // namespace
}  // namespace delayq
