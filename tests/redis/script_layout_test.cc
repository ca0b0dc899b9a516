// Copyright delayq authors.
//
// The C++ side of the Redis store and its Lua scripts spell the key layout
// and the reply layouts each in their own language. These tests hold the two
// together: the keys C++ builds against keys.lua evaluated on a real server,
// and the reply words and field orders C++ reads against the scripts'
// "-- Reply:" headers and lib/snapshot.lua.

#include <limits>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "backends/redis/client/connection.h"
#include "backends/redis/internal/keys.h"
#include "backends/redis/internal/record.h"
#include "backends/redis/internal/replies.h"
#include "backends/redis/internal/script_calls.h"
#include "backends/redis/internal/scripts.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/redis/redis_test_server.h"
#include "tests/testing/files.h"

namespace delayq {
namespace {

using ::delayq::testing::ReadFile;
using redis_internal::KeyLayout;
using ::testing::ElementsAreArray;

std::string ScriptDir() {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const char* workspace = std::getenv("TEST_WORKSPACE");
  return absl::StrCat(srcdir ? srcdir : ".", "/",
                      workspace ? workspace : "delayq",
                      "/backends/redis/scripts");
}

// The embedded script `name`; null if there is none.
const redis_internal::ScriptSource* FindScript(absl::string_view name) {
  for (int i = 0; i < redis_internal::kScriptSourceCount; ++i) {
    if (name == redis_internal::kScriptSources[i].name) {
      return &redis_internal::kScriptSources[i];
    }
  }
  return nullptr;
}

// The embedded source of `name` (helpers included), as the server runs it.
std::string ScriptBody(absl::string_view name) {
  const redis_internal::ScriptSource* s = FindScript(name);
  return s == nullptr ? "" : s->body;
}

// The script's own file in its embedded source, after the helpers: from
// the "-- <name>-<keys>.lua" line embed_scripts.sh puts before it; "" if
// that line is missing.
std::string OwnSource(const redis_internal::ScriptSource& s) {
  const absl::string_view body = s.body;
  const size_t at = body.find(absl::StrCat("\n-- ", s.name, "-"));
  return at == absl::string_view::npos ? "" : std::string(body.substr(at));
}

TEST(KeyLayoutTest, EveryKeyIsTheOneKeysLuaSpells) {
  const std::string keys_lua = ReadFile(ScriptDir() + "/lib/keys.lua");
  ASSERT_FALSE(keys_lua.empty()) << "cannot read keys.lua";
  const std::string probe = keys_lua + R"lua(
return {JOBS, ready_key(ARGV[1]), dead_key(ARGV[1]),
        tdelayed_key(ARGV[1]), treserved_key(ARGV[1]), DUE,
        RESERVED, TOPICS, SEQ, HORIZON, META, NEWS, PAUSED,
        texpire_key(ARGV[1]), HELD, SCHEDULES, schedule_key(ARGV[1]),
        LIMITS, LIMITS_ASKED, tdone_key(ARGV[1]), DONE,
        twaiting_key(ARGV[1])}
)lua";
  const std::string ns = "layout-ns";
  const KeyLayout keys(ns);
  const std::vector<std::string> from_lua =
      testing::RawCommand(testing::SharedRedisServer().port(),
                          {"EVAL", probe, "1", keys.prefix(), "topic.a"});
  const std::vector<std::string> from_cpp = {keys.Jobs(),
                                             keys.Ready("topic.a"),
                                             keys.Dead("topic.a"),
                                             keys.TopicDelayed("topic.a"),
                                             keys.TopicReserved("topic.a"),
                                             keys.Due(),
                                             keys.Reserved(),
                                             keys.Topics(),
                                             keys.Seq(),
                                             keys.Horizon(),
                                             keys.Meta(),
                                             keys.NewsChannel(),
                                             keys.Paused(),
                                             keys.TopicExpiring("topic.a"),
                                             keys.Held(),
                                             keys.Schedules(),
                                             keys.Schedule("topic.a"),
                                             keys.Limits(),
                                             keys.LimitsAsked(),
                                             keys.TopicDone("topic.a"),
                                             keys.Done(),
                                             keys.TopicWaiting("topic.a")};
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

// The scripts' one argument order: a script that takes the time takes it
// first, ARGV[1] `now`, and the clock mode that goes with it second,
// ARGV[2] `clock_mode`; what the call is about (an id and its token, a
// topic) follows. embed_scripts.sh refuses a header that breaks it; this
// checks that the scripts name their time so that it can.
TEST(ScriptCallTest, EveryScriptTakesTheTimeFirst) {
  int timed = 0;
  for (int i = 0; i < redis_internal::kScriptSourceCount; ++i) {
    const redis_internal::ScriptSource& s = redis_internal::kScriptSources[i];
    const std::string own = OwnSource(s);
    ASSERT_FALSE(own.empty()) << s.name;
    for (absl::string_view line : absl::StrSplit(own, '\n')) {
      if (!absl::ConsumePrefix(&line, "-- ARGV[")) continue;
      const absl::string_view what =
          absl::StripLeadingAsciiWhitespace(line.substr(line.find(']') + 1));
      if (absl::StartsWith(what, "now:")) {
        EXPECT_TRUE(absl::StartsWith(line, "1]")) << s.name << ": " << line;
        ++timed;
      }
      if (absl::StartsWith(what, "clock_mode:")) {
        EXPECT_TRUE(absl::StartsWith(line, "2]")) << s.name << ": " << line;
      }
    }
  }
  EXPECT_GE(timed, 10);
}

// A call is checked against what its script's header declares
// (embed_scripts.sh reads the "-- KEYS[n]" and "-- ARGV[n]" lines). The
// store's calls come from the generated ToCall(), which passes the declared
// counts; the check stays for a call built by hand.
TEST(ScriptCallTest, ACallThatIsNotTheDeclaredOneIsRefused) {
  using redis_internal::Scripts;
  const redis_internal::ScriptSource* ack = FindScript("ack");
  const redis_internal::ScriptSource* add = FindScript("add");
  ASSERT_NE(ack, nullptr);
  ASSERT_NE(add, nullptr);
  EXPECT_EQ(ack->num_keys, 3);
  EXPECT_EQ(ack->num_args, 6);
  EXPECT_FALSE(ack->more_args);
  EXPECT_TRUE(add->more_args);
  Scripts::Call good("ack", {"p", "j", "r"}, {"1", "0", "0", "id", "7", ""});
  EXPECT_TRUE(Scripts::CheckCall(*ack, good).ok());
  Scripts::Call short_args("ack", {"p", "j", "r"}, {"1", "0", "0", "id", "7"});
  const absl::Status refused = Scripts::CheckCall(*ack, short_args);
  EXPECT_EQ(refused.code(), absl::StatusCode::kInternal);
  EXPECT_THAT(std::string(refused.message()),
              ::testing::HasSubstr("declares 3 keys and 6 arguments; the "
                                   "call passed 3 and 5"));
  Scripts::Call few_keys("ack", {"p", "j"}, {"1", "0", "0", "id", "7", ""});
  EXPECT_FALSE(Scripts::CheckCall(*ack, few_keys).ok());
  // A list after the declared arguments may be of any length, even empty.
  Scripts::Call no_jobs("add", {"p", "s", "t", "j", "d"}, {"1", "0", "0"});
  EXPECT_TRUE(Scripts::CheckCall(*add, no_jobs).ok());
  Scripts::Call no_time("add", {"p", "s", "t", "j", "d"}, {"1"});
  EXPECT_FALSE(Scripts::CheckCall(*add, no_time).ok());
}

// The generated struct of a script puts each member where the header
// declares it, whatever order the caller sets them in.
TEST(ScriptCallTest, GeneratedCallsLayOutNamedMembersInTheDeclaredOrder) {
  redis_internal::FailArgs fail;
  fail.retry_at = "retry_at";
  fail.error = "error";
  fail.token = "token";
  fail.id = "id";
  fail.counts = "counts";
  fail.clock_mode = "clock_mode";
  fail.now = "now";
  fail.due = "due";
  fail.reserved = "reserved";
  fail.jobs = "jobs";
  fail.prefix = "prefix";
  absl::StatusOr<redis_internal::Scripts::Call> call =
      redis_internal::ToCall(std::move(fail));
  ASSERT_TRUE(call.ok()) << call.status();
  EXPECT_EQ(call->script, "fail");
  EXPECT_THAT(call->keys,
              ElementsAreArray({"prefix", "jobs", "reserved", "due"}));
  EXPECT_THAT(call->args, ElementsAreArray({"now", "clock_mode", "counts", "id",
                                            "token", "error", "retry_at"}));
  const redis_internal::ScriptSource* declared = FindScript("fail");
  ASSERT_NE(declared, nullptr);
  EXPECT_TRUE(redis_internal::Scripts::CheckCall(*declared, *call).ok());

  // A list follows the declared arguments: its strings, then what is
  // already encoded.
  redis_internal::AddArgs add;
  add.prefix = "p";
  add.seq = "s";
  add.topics = "t";
  add.jobs = "j";
  add.due = "d";
  add.now = "1";
  add.clock_mode = "0";
  add.counts = "0";
  add.batch.values = {"a", "b"};
  redis_internal::AppendArgument("c", &add.batch.encoded);
  add.batch.encoded_count = 1;
  call = redis_internal::ToCall(std::move(add));
  ASSERT_TRUE(call.ok()) << call.status();
  EXPECT_THAT(call->args, ElementsAreArray({"1", "0", "0", "a", "b"}));
  EXPECT_EQ(call->encoded_args, "$1\r\nc\r\n");
  EXPECT_EQ(call->encoded_count, 1u);
  EXPECT_TRUE(
      redis_internal::Scripts::CheckCall(*FindScript("add"), *call).ok());
}

// A member left unset is an error naming it, and no call is made.
TEST(ScriptCallTest, ACallWithAMemberLeftUnsetIsRefused) {
  redis_internal::ReleaseArgs release;
  release.prefix = "p";
  release.jobs = "j";
  release.reserved = "r";
  release.due = "d";
  release.now = "1";
  release.clock_mode = "0";
  release.id = "id";
  release.run_at = "2";
  absl::StatusOr<redis_internal::Scripts::Call> call =
      redis_internal::ToCall(std::move(release));
  EXPECT_EQ(call.status().code(), absl::StatusCode::kInternal);
  EXPECT_THAT(std::string(call.status().message()),
              ::testing::HasSubstr("script 'release' leaves ARGV[4] token "
                                   "unset"));

  redis_internal::NextDueArgs next_due;
  next_due.prefix = "p";
  next_due.due = "d";
  call = redis_internal::ToCall(std::move(next_due));
  EXPECT_EQ(call.status().code(), absl::StatusCode::kInternal);
  EXPECT_THAT(std::string(call.status().message()),
              ::testing::HasSubstr("KEYS[2] reserved"));

  // A list may stay empty.
  redis_internal::WithdrawArgs withdraw;
  withdraw.prefix = "p";
  withdraw.jobs = "j";
  withdraw.reserved = "r";
  withdraw.now = "1";
  withdraw.clock_mode = "0";
  withdraw.counts = "0";
  call = redis_internal::ToCall(std::move(withdraw));
  ASSERT_TRUE(call.ok()) << call.status();
  EXPECT_EQ(call->args.size(), 3u);
}

// The names job.lua gives the record's positions: its lines
// "local A, B, C = 1, 2, 3".
std::map<std::string, int> RecordPositions() {
  std::map<std::string, int> out;
  const std::string lua = ReadFile(ScriptDir() + "/lib/job.lua");
  static const std::regex kLine(R"(local ([A-Z_, ]+) = ([0-9, ]+))");
  for (const std::string& line :
       std::vector<std::string>(absl::StrSplit(lua, '\n'))) {
    std::smatch m;
    if (!std::regex_match(line, m, kLine)) continue;
    const std::vector<std::string> names = absl::StrSplit(m[1].str(), ", ");
    const std::vector<std::string> values = absl::StrSplit(m[2].str(), ", ");
    for (size_t i = 0; i < names.size() && i < values.size(); ++i) {
      out[names[i]] = std::stoi(values[i]);
    }
  }
  return out;
}

// The hot scripts (ack, reserve, ack_reserve) require no helpers and spell out
// record positions and key names instead. A script that reads a record position
// by number names it on a "-- fields:" line, as job.lua names it; every
// key a script spells ("P .. 'name'") is one keys.lua spells.
TEST(HotScriptLayoutTest, SpelledOutFieldsAndKeysAreJobLuasAndKeysLuas) {
  const std::map<std::string, int> positions = RecordPositions();
  ASSERT_EQ(positions.at("TOKEN"), 15);  // the parse found job.lua's names
  const std::string keys_lua = ReadFile(ScriptDir() + "/lib/keys.lua");
  static const std::regex kField(R"(([A-Z_]+)=([0-9]+))");
  static const std::regex kIndex(R"(\bj\[([0-9]+)\])");
  static const std::regex kKey(R"(P \.\. '[a-z_:]+')");
  int with_fields = 0;
  for (int i = 0; i < redis_internal::kScriptSourceCount; ++i) {
    const redis_internal::ScriptSource& s = redis_internal::kScriptSources[i];
    const std::string own = OwnSource(s);
    ASSERT_FALSE(own.empty()) << s.name;
    std::set<int> declared;
    for (absl::string_view line : absl::StrSplit(own, '\n')) {
      if (!absl::ConsumePrefix(&line, "-- fields:")) continue;
      const std::string text(line);
      for (std::sregex_iterator it(text.begin(), text.end(), kField), end;
           it != end; ++it) {
        const std::string name = (*it)[1];
        const int at = std::stoi((*it)[2]);
        ASSERT_TRUE(positions.count(name)) << s.name << ": " << name;
        EXPECT_EQ(positions.at(name), at) << s.name << ": " << name;
        declared.insert(at);
      }
    }
    if (!declared.empty()) ++with_fields;
    for (std::sregex_iterator it(own.begin(), own.end(), kIndex), end;
         it != end; ++it) {
      EXPECT_TRUE(declared.count(std::stoi((*it)[1])))
          << s.name << " reads " << (*it)[0] << " without a -- fields: name";
    }
    for (std::sregex_iterator it(own.begin(), own.end(), kKey), end; it != end;
         ++it) {
      EXPECT_TRUE(absl::StrContains(keys_lua, (*it)[0].str()))
          << s.name << " spells " << (*it)[0] << ", which keys.lua does not";
    }
  }
  EXPECT_EQ(with_fields, 3) << "ack, reserve and ack_reserve";
}

// On a Redis Cluster, Redis runs no script whose declared keys are not all
// where it runs, and the prefix "{ns}:" is never a key: so while a
// namespace's slot migrates, the source answers every script with ASK and
// the target answers with TRYAGAIN (a multi-key call with a key missing).
// No script can then see half of a store that is being moved.
TEST(ClusterLayoutTest, EveryScriptDeclaresThePrefixAndAnotherKey) {
  for (int i = 0; i < redis_internal::kScriptSourceCount; ++i) {
    const redis_internal::ScriptSource& s = redis_internal::kScriptSources[i];
    SCOPED_TRACE(s.name);
    EXPECT_GE(s.num_keys, 2);
    EXPECT_TRUE(
        absl::StrContains(s.body, "-- KEYS[1]  prefix: key prefix \"{ns}:\""));
  }
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

TEST(ReplyLayoutTest, SettledFieldsAreInTheOrderSettledLuaSends) {
  const std::string lua = ReadFile(ScriptDir() + "/lib/settled.lua");
  EXPECT_THAT(redis_internal::kSettledFields,
              ElementsAreArray(FieldList(lua, "Each is an entry")));
}

// job.lua's names for the record's positions and states, against
// kRecordFields and kRecordStates.
TEST(RecordLayoutTest, FieldsAndStatesAreWhereJobLuaPutsThem) {
  const std::string lua = ReadFile(ScriptDir() + "/lib/keys.lua") +
                          ReadFile(ScriptDir() + "/lib/job.lua") + R"lua(
return {TOPIC, STATE, PRIORITY, MAX_ATTEMPTS, TTR, ENQUEUED_AT, RUN_AT,
        SEQ_NO, PAYLOAD, ATTEMPTS, DEADLINE, TOKEN, LAST_ERROR,
        EXPIRE_AT, DISCARD, UNIQUE_FOR, STATE_NAMES[ST_DELAYED], STATE_NAMES[ST_READY],
        STATE_NAMES[ST_RESERVED], STATE_NAMES[ST_DEAD],
        ST_DELAYED, ST_READY, ST_RESERVED, ST_DEAD, AFTER, ON_FAILURE, PENDING,
        STATE_NAMES[ST_DONE], STATE_NAMES[ST_WAITING], ST_DONE, ST_WAITING}
)lua";
  const std::vector<std::string> from_lua = testing::RawCommand(
      testing::SharedRedisServer().port(), {"EVAL", lua, "1", "{ns}:"});
  auto position = [](const char* name) {
    return std::to_string(
        redis_internal::FieldAt(redis_internal::kRecordFields, name) + 1);
  };
  const std::vector<std::string> from_cpp = {position("topic"),
                                             position("state"),
                                             position("priority"),
                                             position("max_attempts"),
                                             position("ttr"),
                                             position("enqueued_at"),
                                             position("run_at"),
                                             position("seq"),
                                             position("payload"),
                                             position("attempts"),
                                             position("deadline"),
                                             position("token"),
                                             position("last_error"),
                                             position("expire_at"),
                                             position("discard"),
                                             position("unique_for"),
                                             "delayed",
                                             "ready",
                                             "reserved",
                                             "dead",
                                             "0",
                                             "1",
                                             "2",
                                             "3",
                                             position("after"),
                                             position("on_dependency_failure"),
                                             position("pending"),
                                             "done",
                                             "waiting",
                                             "4",
                                             "5"};
  EXPECT_EQ(from_lua, from_cpp);
  EXPECT_EQ(
      redis_internal::FieldAt(redis_internal::kRecordFields, "payload") + 1,
      static_cast<size_t>(redis_internal::kRecordMinFields));
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(std::string(redis_internal::kRecordStates[i]), from_cpp[16 + i]);
  }
  EXPECT_EQ(std::string(redis_internal::kRecordStates[4]), "done");
  EXPECT_EQ(std::string(redis_internal::kRecordStates[5]), "waiting");
}

// A record job.lua packs, with every value at an extreme, decodes to the
// same job; the spec the C++ side packs reads back in Lua as written.
TEST(RecordLayoutTest, RecordsPackedInLuaDecodeInCpp) {
  const std::string payload = std::string("a\0b", 3) + std::string(300, 'p');
  const std::string lua = ReadFile(ScriptDir() + "/lib/keys.lua") +
                          ReadFile(ScriptDir() + "/lib/job.lua") + R"lua(
local spec = {cmsgpack.unpack(ARGV[2])}
local j = {'topic.a', ST_RESERVED, spec[1], spec[2], spec[3], spec[4],
           spec[5], spec[6], -4503599627370496, 4503599627370496,
           123456789, ARGV[1], 7, 4503599627370000, 4503599627370495,
           'boom'}
local short = {'t', ST_DELAYED, 0, 1, 0, 0, 0, 0, 1, 2, 3, ''}
return {job_pack(j), job_pack(short)}
)lua";
  NewJob spec_of;
  spec_of.priority = std::numeric_limits<int>::min();
  spec_of.max_attempts = 1000;
  spec_of.ttr = absl::Microseconds(int64_t{1} << 52);
  spec_of.backoff = Backoff::Fixed(absl::Seconds(3));
  std::string spec;
  redis_internal::AppendSpec(spec_of, &spec);
  const std::vector<std::string> packed =
      testing::RawCommand(testing::SharedRedisServer().port(),
                          {"EVAL", lua, "1", "{ns}:", payload, spec});
  ASSERT_EQ(packed.size(), 2u) << packed[0];

  Lease lease;
  ASSERT_TRUE(redis_internal::DecodeRecord(packed[0], &lease));
  const Job& j = lease.job;
  EXPECT_EQ(j.topic, "topic.a");
  EXPECT_EQ(j.state, JobState::kReserved);
  EXPECT_EQ(j.priority, std::numeric_limits<int>::min());
  EXPECT_EQ(j.max_attempts, 1000);
  EXPECT_EQ(j.ttr, absl::Microseconds(int64_t{1} << 52));
  EXPECT_EQ(j.backoff.kind, Backoff::Kind::kFixed);
  EXPECT_EQ(j.backoff.base, absl::Seconds(3));
  EXPECT_EQ(j.enqueued_at, absl::FromUnixMicros(-(int64_t{1} << 52)));
  EXPECT_EQ(j.run_at, absl::FromUnixMicros(int64_t{1} << 52));
  EXPECT_EQ(j.payload, payload);
  EXPECT_EQ(j.attempts, 7);
  EXPECT_EQ(j.deadline, absl::FromUnixMicros(4503599627370000));
  EXPECT_EQ(lease.deadline, j.deadline);
  EXPECT_EQ(lease.token, uint64_t{4503599627370495});
  EXPECT_EQ(j.last_error, "boom");

  Lease short_lease;
  ASSERT_TRUE(redis_internal::DecodeRecord(packed[1], &short_lease));
  EXPECT_EQ(short_lease.job.state, JobState::kDelayed);
  EXPECT_EQ(short_lease.job.attempts, 0);
  EXPECT_EQ(short_lease.job.deadline, absl::InfinitePast());
  EXPECT_EQ(short_lease.token, 0u);
  EXPECT_EQ(short_lease.job.last_error, "");
  // The record of a job never reserved ends after its payload: twelve
  // values of one byte each here, the topic "t" two.
  EXPECT_EQ(packed[1].size(), 13u);

  // Cut short or with a stray value, a record does not decode.
  EXPECT_FALSE(redis_internal::DecodeRecord(
      absl::string_view(packed[0]).substr(0, packed[0].size() - 1), &lease));
  EXPECT_FALSE(redis_internal::DecodeRecord(packed[1] + "\xc3", &lease));
}

}  // namespace
}  // namespace delayq
