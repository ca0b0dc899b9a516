// Copyright delayq authors.
//
// ParseSqliteUrl():
// sqlite:PATH[?sync=normal|full&busy_timeout_ms=N&page_size=N].

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "backends/sqlite/internal/schema.h"
#include "delayq/sqlite_backend.h"
#include "src/common/status_macros.h"
#include "src/common/url_query.h"

namespace delayq {
namespace {

absl::Status Bad(absl::string_view url, absl::string_view why) {
  return internal::BadUrl("sqlite", url, why);
}

}  // namespace

absl::StatusOr<SqliteOptions> ParseSqliteUrl(absl::string_view url) {
  constexpr absl::string_view kScheme = "sqlite:";
  if (!absl::StartsWith(url, kScheme)) {
    return Bad(url, "does not start with 'sqlite:'");
  }
  absl::string_view rest = url.substr(kScheme.size());
  absl::string_view query;
  const size_t question = rest.find('?');
  if (question != absl::string_view::npos) {
    query = rest.substr(question + 1);
    rest = rest.substr(0, question);
  }
  if (rest.empty()) return Bad(url, "empty path");
  SqliteOptions options;
  options.path = std::string(rest);
  if (question != absl::string_view::npos && query.empty()) {
    return Bad(url, "empty query after '?'");
  }
  DQ_ASSIGN_OR_RETURN(std::vector<internal::UrlParam> params,
                      internal::SplitUrlQuery("sqlite", url, query));
  for (const internal::UrlParam& param : params) {
    const absl::string_view key = param.first, value = param.second;
    if (key == "sync") {
      if (value == "normal") {
        options.durability = SqliteOptions::Durability::kNormal;
      } else if (value == "full") {
        options.durability = SqliteOptions::Durability::kFull;
      } else {
        return Bad(url, absl::StrCat("sync must be 'normal' or 'full', not '",
                                     value, "'"));
      }
    } else if (key == "busy_timeout_ms") {
      DQ_ASSIGN_OR_RETURN(int64_t ms,
                          internal::UrlInt("sqlite", url, param, 0, INT32_MAX));
      options.busy_timeout = absl::Milliseconds(ms);
    } else if (key == "page_size") {
      int64_t bytes = 0;
      if (!internal::ParseUrlDecimal(value, 512, 65536, &bytes) ||
          !sqlite_internal::ValidPageSize(static_cast<int>(bytes))) {
        return Bad(url, absl::StrCat("page_size must be a power of two from ",
                                     "512 to 65536, not '", value, "'"));
      }
      options.page_size = static_cast<int>(bytes);
    } else {
      DQ_ASSIGN_OR_RETURN(bool counted, internal::ApplyStoreParam(
                                            "sqlite", url, param,
                                            &options.counts, &options.events));
      if (!counted) {
        return Bad(url, absl::StrCat("unknown parameter '", key,
                                     "' (known: sync, busy_timeout_ms, "
                                     "page_size, ",
                                     internal::kStoreParams, ")"));
      }
    }
  }
  return options;
}

}  // namespace delayq
