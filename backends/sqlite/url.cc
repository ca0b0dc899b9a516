// Copyright delayq authors.
//
// ParseSqliteUrl():
// sqlite:PATH[?sync=normal|full&busy_timeout_ms=N&page_size=N].

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "backends/sqlite/internal/schema.h"
#include "delayq/open.h"
#include "delayq/sqlite_backend.h"

namespace delayq {
namespace {

// Plain decimal digits only: SimpleAtoi alone would also take a sign and
// surrounding spaces.
bool ParseDigits(absl::string_view value, int64_t* out) {
  return !value.empty() &&
         value.find_first_not_of("0123456789") == absl::string_view::npos &&
         absl::SimpleAtoi(value, out);
}

}  // namespace

absl::StatusOr<SqliteOptions> ParseSqliteUrl(absl::string_view url) {
  constexpr absl::string_view kScheme = "sqlite:";
  if (!absl::StartsWith(url, kScheme)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "sqlite URL '", RedactedUrl(url), "' does not start with 'sqlite:'"));
  }
  absl::string_view rest = url.substr(kScheme.size());
  absl::string_view query;
  const size_t question = rest.find('?');
  if (question != absl::string_view::npos) {
    query = rest.substr(question + 1);
    rest = rest.substr(0, question);
  }
  if (rest.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("sqlite URL '", RedactedUrl(url), "' has an empty path"));
  }
  SqliteOptions options;
  options.path = std::string(rest);
  if (question == absl::string_view::npos) return options;
  if (query.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "sqlite URL '", RedactedUrl(url), "' has an empty query after '?'"));
  }
  absl::flat_hash_set<std::string> seen;
  for (absl::string_view param : absl::StrSplit(query, '&')) {
    const size_t eq = param.find('=');
    if (eq == absl::string_view::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("sqlite URL '", RedactedUrl(url), "': parameter '",
                       param, "' has no '='"));
    }
    const absl::string_view key = param.substr(0, eq);
    const absl::string_view value = param.substr(eq + 1);
    if (!seen.insert(std::string(key)).second) {
      return absl::InvalidArgumentError(absl::StrCat(
          "sqlite URL '", RedactedUrl(url), "': '", key, "' given twice"));
    }
    if (key == "sync") {
      if (value == "normal") {
        options.durability = SqliteOptions::Durability::kNormal;
      } else if (value == "full") {
        options.durability = SqliteOptions::Durability::kFull;
      } else {
        return absl::InvalidArgumentError(absl::StrCat(
            "sqlite URL '", RedactedUrl(url), "': sync must be 'normal' or ",
            "'full', not '", value, "'"));
      }
    } else if (key == "busy_timeout_ms") {
      int64_t ms = 0;
      if (!ParseDigits(value, &ms) || ms > INT32_MAX) {
        return absl::InvalidArgumentError(absl::StrCat(
            "sqlite URL '", RedactedUrl(url),
            "': busy_timeout_ms must be a whole number ",
            "of milliseconds from 0 to 2147483647, not '", value, "'"));
      }
      options.busy_timeout = absl::Milliseconds(ms);
    } else if (key == "page_size") {
      int64_t bytes = 0;
      if (!ParseDigits(value, &bytes) || bytes > 65536 ||
          !sqlite_internal::ValidPageSize(static_cast<int>(bytes))) {
        return absl::InvalidArgumentError(
            absl::StrCat("sqlite URL '", RedactedUrl(url),
                         "': page_size must be a power of two from ",
                         "512 to 65536, not '", value, "'"));
      }
      options.page_size = static_cast<int>(bytes);
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          "sqlite URL '", RedactedUrl(url), "': unknown parameter '", key,
          "' (known: sync, busy_timeout_ms, page_size)"));
    }
  }
  return options;
}

}  // namespace delayq
