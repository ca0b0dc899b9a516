// Copyright delayq authors.
//
// ParseSqliteUrl(): sqlite:PATH[?sync=normal|full&busy_timeout_ms=N].

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "delayq/sqlite_backend.h"

namespace delayq {

absl::StatusOr<SqliteOptions> ParseSqliteUrl(absl::string_view url) {
  constexpr absl::string_view kScheme = "sqlite:";
  if (!absl::StartsWith(url, kScheme)) {
    return absl::InvalidArgumentError(
        absl::StrCat("sqlite URL '", url, "' does not start with 'sqlite:'"));
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
        absl::StrCat("sqlite URL '", url, "' has an empty path"));
  }
  SqliteOptions options;
  options.path = std::string(rest);
  if (question == absl::string_view::npos) return options;
  if (query.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("sqlite URL '", url, "' has an empty query after '?'"));
  }
  bool seen_sync = false, seen_timeout = false;
  for (absl::string_view param : absl::StrSplit(query, '&')) {
    const size_t eq = param.find('=');
    if (eq == absl::string_view::npos) {
      return absl::InvalidArgumentError(absl::StrCat(
          "sqlite URL '", url, "': parameter '", param, "' has no '='"));
    }
    const absl::string_view key = param.substr(0, eq);
    const absl::string_view value = param.substr(eq + 1);
    if (key == "sync") {
      if (seen_sync) {
        return absl::InvalidArgumentError(
            absl::StrCat("sqlite URL '", url, "': 'sync' given twice"));
      }
      seen_sync = true;
      if (value == "normal") {
        options.durability = SqliteOptions::Durability::kNormal;
      } else if (value == "full") {
        options.durability = SqliteOptions::Durability::kFull;
      } else {
        return absl::InvalidArgumentError(
            absl::StrCat("sqlite URL '", url, "': sync must be 'normal' or ",
                         "'full', not '", value, "'"));
      }
    } else if (key == "busy_timeout_ms") {
      if (seen_timeout) {
        return absl::InvalidArgumentError(absl::StrCat(
            "sqlite URL '", url, "': 'busy_timeout_ms' given twice"));
      }
      seen_timeout = true;
      int64_t ms = 0;
      // SimpleAtoi accepts a sign and surrounding spaces; a URL value gets
      // plain digits only.
      const bool digits =
          !value.empty() &&
          value.find_first_not_of("0123456789") == absl::string_view::npos;
      if (!digits || !absl::SimpleAtoi(value, &ms) || ms > INT32_MAX) {
        return absl::InvalidArgumentError(absl::StrCat(
            "sqlite URL '", url, "': busy_timeout_ms must be a whole number ",
            "of milliseconds from 0 to 2147483647, not '", value, "'"));
      }
      options.busy_timeout = absl::Milliseconds(ms);
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("sqlite URL '", url, "': unknown parameter '", key,
                       "' (known: sync, busy_timeout_ms)"));
    }
  }
  return options;
}

}  // namespace delayq
