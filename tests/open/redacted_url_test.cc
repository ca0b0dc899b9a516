// Copyright delayq authors.
//
// A password in a store URL shows in no output: not in RedactedUrl(), not in
// any error from parsing the URL, whatever the URL's shape (malformed,
// scheme-less, a password holding '?', '/', '#', '@' or ':', a password that
// lost its '@').

#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "delayq/delayq.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace delayq {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// Every password below holds this, and nothing else in a URL or a message
// does.
constexpr absl::string_view kMark = "Zq";

// What a user may see of `url`: its redacted form and the error of each
// parser that `OpenBackend` would run on it. A URL that parses is not
// opened (that would connect).
std::vector<std::string> Outputs(const std::string& url) {
  std::vector<std::string> out = {RedactedUrl(url)};
  absl::Status parsed;
  if (absl::StartsWith(url, "sqlite:")) {
    parsed = ParseSqliteUrl(url).status();
  } else if (absl::StartsWith(url, "redis")) {
    parsed = ParseRedisUrl(url).status();
  } else if (absl::StartsWith(url, "postgres")) {
    parsed = ParsePostgresUrl(url).status();
  }
  out.push_back(std::string(parsed.message()));
  const bool connects =
      absl::StartsWith(url, "redis") || absl::StartsWith(url, "postgres");
  if (!parsed.ok() || !connects) {
    // Unknown schemes, and the dispatch's own errors.
    out.push_back(std::string(OpenBackend(url).status().message()));
  }
  return out;
}

void ExpectHidden(const std::string& url) {
  for (const std::string& text : Outputs(url)) {
    EXPECT_THAT(text, Not(HasSubstr(kMark))) << "URL: " << url;
  }
}

// Shapes a password takes in a URL. {pw} is a password in the credentials,
// which may hold anything. {lpw} is one that lost its '@': it holds no '@'
// of its own and does not start with a digit (then "user:1?db=2" or
// ":a@/x" would be a well-formed URL, and nothing could tell). {qpw} is a
// query parameter's value, with '&' and '@' percent-encoded.
constexpr const char* kForms[] = {
    "redis://:{pw}@127.0.0.1:6480",
    "redis://user:{pw}@127.0.0.1:6480/2?namespace=q",
    "rediss://user:{pw}@127.0.0.1:6480?tls_insecure=yes",
    "redis+unix://:{pw}@/run/redis.sock?db=1",
    "redis+unix://app:{pw}@relative.sock",
    "redis+sentinel://u:{pw}@127.0.0.1:1/main?db=x",
    "redis+sentinel://u:{pw}@127.0.0.1:1",
    "redis+cluster://u:{pw}@127.0.0.1:1,h2",
    "redis://:{pw}@localhost",
    "redis://:{pw}@127.0.0.1:notaport",
    "redis://:{pw}@127.0.0.1:1/x?colour=blue",
    "redis://:{pw}@127.0.0.1:1?pool=0",
    // Scheme-less or malformed prefixes.
    "redis:{pw}@host",
    "redis:/:{pw}@host",
    "redis//:{pw}@host",
    "Redis://:{pw}@127.0.0.1:1",
    ":{pw}@127.0.0.1:1",
    "{pw}@127.0.0.1:1",
    "{pw}://h:1@127.0.0.1:1",
    " redis://:{pw}@127.0.0.1:1",
    // A password that lost its '@'.
    "redis+unix://:{lpw}",
    "redis://user:{lpw}",
    "redis://:{lpw}",
    "redis://127.0.0.1:{lpw}",
    "rediss+cluster://u:{lpw}",
    "redis+sentinel://u:{lpw}",
    // Passwords as query parameters.
    "redis+sentinel://127.0.0.1:1/m?sentinel_password={qpw}&colour=x",
    "redis://127.0.0.1:1?sentinel_password={qpw}",
    // PostgreSQL.
    "postgres://u:{pw}@127.0.0.1:5432/db?schema=q",
    "postgresql://u:{pw}@db.internal/app?sslmode=require",
    "postgres://u:{pw}@h1:5432,h2/db",
    "postgres://u:{pw}@[::1]:5432/db",
    "postgres://u:{pw}@127.0.0.1:notaport/db",
    "postgres://u:{pw}@h/db?bogus=1",
    "postgres://u:{pw}@h/db?schema=9bad",
    "postgres://:{lpw}",
    "postgres://u:{lpw}",
    "postgres://u:{lpw}/db",
    "postgres://h/db?password={qpw}&schema=x",
    "postgres://h/db?sslpassword={qpw}",
    "postgres://h/db?PASSWORD={qpw}&schema=x",
    "postgres://h/db?pwd={qpw}",
    "sqlite:j.db?Pass%77ord={qpw}",
};

// `form` with `pw`, or nothing when `pw` cannot take that place.
std::optional<std::string> Fill(absl::string_view form, absl::string_view pw) {
  if (absl::StrContains(form, "{lpw}") &&
      (absl::StrContains(pw, '@') || absl::ascii_isdigit(pw[0]))) {
    return std::nullopt;
  }
  if (absl::StrContains(form, "{qpw}") &&
      pw.find_first_of("&@") != absl::string_view::npos) {
    return std::nullopt;
  }
  return absl::StrReplaceAll(form,
                             {{"{pw}", pw}, {"{lpw}", pw}, {"{qpw}", pw}});
}

TEST(RedactedUrlPropertyTest, TheReportedFormsHideThePassword) {
  for (const char* url :
       {"redis://:S3cret?PwZq@127.0.0.1:6480", "redis:S3cretPwZq@host",
        "redis:/:pwZq@host", "redis//:pwZq@host", "redis+unix://:pwZq",
        "redis://user:secretZq", "redis://:S3cret#PwZq@127.0.0.1:6480",
        "redis://:Zq@127.0.0.1:1?colour=blue&password=Zq"}) {
    ExpectHidden(url);
  }
}

TEST(RedactedUrlPropertyTest, EveryFormWithTrickyPasswordsHidesIt) {
  const std::vector<std::string> passwords = {
      "Zq",      "Zq?x=1",    "a/Zq",    "Zq#frag", "Zq@h:1", "a:Zq",
      "Zq/1@2",  "1?db=Zq",   "Zq%zz",   "Zq%41",   ":Zq",    "Zq,h2:1",
      "//Zq//",  "Zq@",       "@Zq",     "Zq?",     "?Zq@",   "Zq:6379",
      "[::1]Zq", "Zq:1/m?db", "h:1@Zq@", "Zq&x=1",
  };
  for (const char* form : kForms) {
    for (const std::string& pw : passwords) {
      if (std::optional<std::string> url = Fill(form, pw)) ExpectHidden(*url);
    }
  }
}

TEST(RedactedUrlPropertyTest, GeneratedPasswordsAreHidden) {
  constexpr absl::string_view kChars = "abcXYZ019:/?#@%=,.[]!$;~-+_";
  std::mt19937 rng(20261128);
  for (int i = 0; i < 4000; ++i) {
    std::string pw;
    const int pieces = 1 + rng() % 3;
    for (int p = 0; p < pieces; ++p) {
      const int len = rng() % 4;
      for (int c = 0; c < len; ++c) pw.push_back(kChars[rng() % kChars.size()]);
      absl::StrAppend(&pw, kMark);
    }
    const char* form = kForms[rng() % (sizeof(kForms) / sizeof(kForms[0]))];
    if (std::optional<std::string> url = Fill(form, pw)) ExpectHidden(*url);
  }
}

// Well-formed URLs keep everything but the password readable.
TEST(RedactedUrlTest, ShowsWhatIsNotAPassword) {
  EXPECT_EQ(RedactedUrl("redis://:S3c@ret/Pw@127.0.0.1:6480"),
            "redis://***@127.0.0.1:6480");
  // A '?' or '#' before the '@': the '@' may belong to a password
  // parameter's value, and the "host" to the rest of it.
  EXPECT_EQ(RedactedUrl("redis://:S3cret?Pw@127.0.0.1:6480"), "redis://***");
  EXPECT_EQ(RedactedUrl("redis://:S3cret#Pw@127.0.0.1:6480"), "redis://***");
  // A password parameter after a second '?' is hidden as after a '&', and
  // a password's own '?' does not end it.
  EXPECT_EQ(RedactedUrl("sqlite:j.db?x=1?password=S3cret&y=2"),
            "sqlite:j.db?x=1?password=***&y=2");
  EXPECT_EQ(RedactedUrl("sqlite:j.db?password=S3?cr?et&y=2"),
            "sqlite:j.db?password=***&y=2");
  EXPECT_EQ(RedactedUrl("x?a=host?sentinel_password=S3cret"),
            "x?a=host?sentinel_password=***");
  EXPECT_EQ(RedactedUrl("rediss://h:1?password=@rest:7000"), "rediss://***");
  EXPECT_EQ(RedactedUrl("redis://?sentinel_password=@rest:7000"),
            "redis://***");
  EXPECT_EQ(RedactedUrl("rediss://@h:1?sentinel_password=@rest:7000"),
            "rediss://***");
  EXPECT_EQ(RedactedUrl("redis://:pw@h:1?password=@rest:7000"), "redis://***");
  EXPECT_EQ(RedactedUrl("rediss:///h:1?password=@rest:7000"), "rediss://***");
  EXPECT_EQ(RedactedUrl("redis+unix:///r.sock?password=a@b:1"),
            "redis+unix://***");
  EXPECT_EQ(RedactedUrl("redis+unix://:pw"), "redis+unix://***");
  EXPECT_EQ(RedactedUrl("redis://user:secret"), "redis://***");
  EXPECT_EQ(RedactedUrl("redis://:pw@h:1?a=b@c"), "redis://***");
  EXPECT_EQ(RedactedUrl("redis//:pw@host"), "***");
  EXPECT_EQ(RedactedUrl("redis:S3cretPw@host"), "***");
  EXPECT_EQ(RedactedUrl("postgres://db/jobs"), "postgres://db/jobs");
  EXPECT_EQ(RedactedUrl("postgres://app:S3cret@db:5432/jobs?schema=q"),
            "postgres://***@db:5432/jobs?schema=q");
  EXPECT_EQ(RedactedUrl("postgresql://app:S3cret@h1,h2:5433/jobs"),
            "postgresql://***@h1,h2:5433/jobs");
  EXPECT_EQ(RedactedUrl("postgres:///jobs?host=%2Frun%2Fpostgresql"),
            "postgres:///jobs?host=%2Frun%2Fpostgresql");
  EXPECT_EQ(RedactedUrl("postgres://h/db?password=S3cret&sslmode=require"),
            "postgres://h/db?password=***&sslmode=require");
  EXPECT_EQ(RedactedUrl("postgres://app:S3cret/db"), "postgres://***");
  EXPECT_EQ(RedactedUrl("postgres://app:S3c?ret@h/db"), "postgres://***");
  EXPECT_EQ(RedactedUrl("pg://app:S3cret@h/db"), "***");
  EXPECT_EQ(RedactedUrl("redis+unix:///run/redis.sock?db=2"),
            "redis+unix:///run/redis.sock?db=2");
  // A socket path with a ':' and no '@' may be "user:password" whose '@'
  // was forgotten: hidden.
  EXPECT_EQ(RedactedUrl("redis+unix:///X:PW?db=2"), "redis+unix://***");
  EXPECT_EQ(RedactedUrl("redis+unix://:pw@/run/a:b.sock"), "redis+unix://***");
  EXPECT_EQ(RedactedUrl("redis://[::1]:6379/1"), "redis://[::1]:6379/1");
  EXPECT_EQ(RedactedUrl("redis+cluster://h1:7000,h2:7001?namespace=q"),
            "redis+cluster://h1:7000,h2:7001?namespace=q");
  EXPECT_EQ(RedactedUrl("redis://h:1?password_file=/run/pw"),
            "redis://h:1?password_file=/run/pw");
  EXPECT_EQ(RedactedUrl("jobs.db"), "jobs.db");
  // No ':' or '@' to hold credentials, but a password parameter all the same.
  EXPECT_EQ(RedactedUrl("redis+unix/tmp/r.sock?sentinel_password=pw&db=1"),
            "redis+unix/tmp/r.sock?sentinel_password=***&db=1");
  EXPECT_EQ(RedactedUrl("memory:"), "memory:");
  EXPECT_EQ(RedactedUrl("sqlite:/var/jobs@2.db?sync=full"),
            "sqlite:/var/jobs@2.db?sync=full");
  EXPECT_EQ(RedactedUrl(""), "");
}

}  // namespace
}  // namespace delayq
