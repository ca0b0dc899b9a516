// Copyright delayq authors.
//
// Store URLs of every scheme, and what delayq says about them.
//
// Property: a password never appears in any text made from its URL:
// RedactedUrl(), and the errors of ParseRedisUrl(), ParseSqliteUrl(),
// ParsePostgresUrl(), OpenBackend() (for URLs it refuses without opening
// anything), and
// BadUrl(). The query helpers (SplitUrlQuery(), UrlInt()) are checked
// through the parsers, which give them only the text they read as a query:
// a parser stops at a malformed authority first, while the text after any
// '?' may be the rest of a password that holds one.
//
// The input builds a URL around a password that holds a marker string: a
// scheme (or none), a separator (well-formed "://" or a malformed one such
// as ":" or "//"), optional "user:", the password, then '@' and a host, or
// no '@' at all (then the password holds no '@', '/', '?', '#' or ',',
// which would end the credentials or a port), or a query in which the password
// is the value of a *password parameter (the only place a sqlite: or memory:
// URL has one). Every other part of the URL has the marker removed, so the
// marker in an output can only have come from the password.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "delayq/open.h"
#include "delayq/postgres_backend.h"
#include "delayq/redacted_url.h"
#include "delayq/redis_backend.h"
#include "delayq/sqlite_backend.h"
#include "fuzzer/FuzzedDataProvider.h"
#include "src/common/url_query.h"
#include "tests/fuzz/fuzz_check.h"

namespace delayq {
namespace {

constexpr absl::string_view kMarker = "Zq9Xw";

// `text` without the marker, however it was spliced in.
std::string Clean(std::string text) {
  while (absl::StrContains(text, kMarker)) {
    text = absl::StrReplaceAll(text, {{kMarker, ""}});
  }
  return text;
}

std::string Piece(FuzzedDataProvider& in, size_t max) {
  return Clean(in.ConsumeRandomLengthString(max));
}

template <size_t N>
std::string Pick(FuzzedDataProvider& in, const char* const (&options)[N]) {
  return options[in.ConsumeIntegralInRange<size_t>(0, N - 1)];
}

constexpr const char* kSchemes[] = {
    "redis",  "rediss",          "redis+unix",    "redis+sentinel",
    "sqlite", "rediss+sentinel", "redis+cluster", "rediss+cluster",
    "memory", "postgres",        "http",          "postgresql",
    ""};
// How the scheme is joined to the rest, well-formed or not.
constexpr const char* kSeparators[] = {"://", ":", ":/", "//", ":///", "", "/"};
// What follows the password.
constexpr const char* kHosts[] = {
    "host:6379",      "host:6379/2", "[::1]:7000", "/tmp/redis.sock",
    "h1:1,h2:2/main", "h1:1,h2:2",   "",           "host",
    "@host:1",        "/path/to.db"};
constexpr const char* kParams[] = {
    "namespace=ns", "db=1",   "sync=full", "tls_insecure=1",
    "time=server",  "pool=4", "x",         "busy_timeout_ms=10"};
// The parameters that carry a password (RedactedUrl() hides *password).
constexpr const char* kPasswordParams[] = {"password", "sentinel_password"};

// A query of known and unknown parameters, the marker removed.
std::string Params(FuzzedDataProvider& in) {
  std::string out;
  const int n = in.ConsumeIntegralInRange(0, 2);
  for (int i = 0; i < n; ++i) {
    if (i > 0) out += '&';
    out += in.ConsumeBool() ? Pick(in, kParams) : Piece(in, 12);
  }
  return out;
}

// `text` without the characters that end a URL's authority, or one host of
// a list.
std::string StripDelimiters(std::string text) {
  text.erase(std::remove_if(text.begin(), text.end(),
                            [](char c) {
                              return c == '@' || c == '/' || c == '?' ||
                                     c == '#' || c == ',';
                            }),
             text.end());
  return text;
}

// Whether `text` is the start of the URL of a store without credentials.
bool IsPathUrl(absl::string_view text) {
  return absl::StartsWith(text, "sqlite:") || absl::StartsWith(text, "memory:");
}

bool PostgresLike(absl::string_view url);

std::string BuildUrl(FuzzedDataProvider& in) {
  std::string scheme = Pick(in, kSchemes);
  if (scheme.empty()) scheme = Piece(in, 8);
  const std::string separator = Pick(in, kSeparators);
  const std::string before = Piece(in, 8);
  const std::string password = absl::StrCat(before, kMarker, Piece(in, 8));
  std::string url = scheme + separator;
  // A sqlite: or memory: URL names a file or nothing: its text has no
  // credentials and is shown as it is (a path may hold ':' and '@'), so
  // only a query parameter can carry a password there.
  // (So is a bare "memory" or "sqlite", which the userinfo's ':' would
  // make one.)
  // A PostgreSQL URL with an empty authority ("postgres:///db") is a path
  // too: what follows the third '/' is the database's name.
  const bool path_url =
      IsPathUrl(url + ":") ||
      (PostgresLike(scheme + ":") && absl::EndsWith(separator, "///"));
  if (in.ConsumeBool() && !path_url) {
    // In the userinfo: [user]:password, then '@' and a host, or not. A
    // user holds no '/', '?', '#' or '@': unencoded, each ends a URL's
    // userinfo, and what follows it is read as the rest of the URL (a
    // password that holds one is still made, below).
    if (in.ConsumeBool()) {
      std::string user = Piece(in, 8);
      user.erase(std::remove_if(user.begin(), user.end(),
                                [](char c) {
                                  return c == '/' || c == '?' || c == '#' ||
                                         c == '@';
                                }),
                 user.end());
      // Not one that makes the text before it, with the ':' after it, a
      // path URL ("sql" + "ite").
      if (!IsPathUrl(url + user + ":")) url += user;
    }
    url += ":";
    const int after = in.ConsumeIntegralInRange(0, 3);
    // With no '@' of its own after it, a password's last '@' would end the
    // credentials, and its '/', '?', '#' or ',' a port ("u:8/x"): what
    // follows is a host, a path, a query or the next host of a list, as
    // written ("u:@h:1", "u:8,h:2").
    url += after >= 2 ? StripDelimiters(password) : password;
    switch (after) {
      case 0:
        absl::StrAppend(&url, "@", Pick(in, kHosts));
        break;
      case 1: {  // a '?' in the password before the '@'
        const std::string more = Piece(in, 4);
        absl::StrAppend(&url, "?", more, "@", Pick(in, kHosts));
        break;
      }
      case 2:  // no '@'
        break;
      case 3:
        absl::StrAppend(&url, Piece(in, 16));
        break;
    }
    if (in.ConsumeBool()) absl::StrAppend(&url, "?", Params(in));
  } else {
    // In the query: ...?[params&]NAME=password[&params].
    absl::StrAppend(&url, Pick(in, kHosts), "?");
    const std::string before = Params(in);
    if (!before.empty()) absl::StrAppend(&url, before, "&");
    // Written as a URL's query must hold it: a raw '&' would end the
    // value (the rest is another parameter), so it is %26, and '%' is %25.
    absl::StrAppend(
        &url, Pick(in, kPasswordParams), "=",
        absl::StrReplaceAll(password, {{"%", "%25"}, {"&", "%26"}}));
    if (in.ConsumeBool()) absl::StrAppend(&url, "&", Params(in));
  }
  return url;
}

void CheckHidden(const std::string& url, absl::string_view what,
                 absl::string_view text) {
  FUZZ_CHECK(!absl::StrContains(text, kMarker), "the password of URL \"",
             fuzz::Escaped(url), "\" shows in ", what, ": \"",
             fuzz::Escaped(std::string(text)), "\"");
}

bool PostgresLike(absl::string_view url) {
  return absl::StartsWith(url, "postgres:") ||
         absl::StartsWith(url, "postgresql:");
}

bool RedisLike(absl::string_view url) {
  return absl::StartsWith(url, "redis:") || absl::StartsWith(url, "redis+") ||
         absl::StartsWith(url, "rediss:") || absl::StartsWith(url, "rediss+");
}

}  // namespace
}  // namespace delayq

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace delayq;  // NOLINT: the entry point is outside the namespace
  FuzzedDataProvider in(data, size);
  const std::string url = BuildUrl(in);

  CheckHidden(url, "RedactedUrl()", RedactedUrl(url));

  absl::StatusOr<RedisOptions> redis = ParseRedisUrl(url);
  CheckHidden(url, "ParseRedisUrl()'s error", redis.status().message());
  absl::StatusOr<SqliteOptions> sqlite = ParseSqliteUrl(url);
  CheckHidden(url, "ParseSqliteUrl()'s error", sqlite.status().message());
  absl::StatusOr<PostgresOptions> postgres = ParsePostgresUrl(url);
  CheckHidden(url, "ParsePostgresUrl()'s error", postgres.status().message());

  // OpenBackend() opens nothing for a URL that no store's parser takes.
  const bool would_open = url == "memory:" || url == "memory" ||
                          (absl::StartsWith(url, "sqlite:") && sqlite.ok()) ||
                          (RedisLike(url) && redis.ok()) ||
                          (PostgresLike(url) && postgres.ok());
  if (!would_open) {
    CheckHidden(url, "OpenBackend()'s error",
                OpenBackend(url).status().message());
  }

  CheckHidden(url, "BadUrl()",
              internal::BadUrl("fuzz", url, "refused").message());
  return 0;
}
