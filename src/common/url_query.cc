// Copyright delayq authors.

#include "src/common/url_query.h"

#include <algorithm>
#include <string>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "delayq/redacted_url.h"
#include "src/common/status_macros.h"

namespace delayq {
namespace internal {

absl::Status BadUrl(absl::string_view store, absl::string_view url,
                    absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat(store, " URL '", RedactedUrl(url), "': ", why));
}

absl::StatusOr<std::vector<UrlParam>> SplitUrlQuery(absl::string_view store,
                                                    absl::string_view url,
                                                    absl::string_view query) {
  std::vector<UrlParam> params;
  if (query.empty()) return params;
  absl::flat_hash_set<absl::string_view> seen;
  for (absl::string_view pair : absl::StrSplit(query, '&')) {
    const size_t eq = pair.find('=');
    const absl::string_view name = pair.substr(0, eq);
    if (eq == absl::string_view::npos || eq + 1 == pair.size()) {
      return BadUrl(store, url,
                    absl::StrCat("parameter '", name, "' has no value"));
    }
    if (!seen.insert(name).second) {
      return BadUrl(store, url,
                    absl::StrCat("parameter '", name, "' given twice"));
    }
    params.emplace_back(name, pair.substr(eq + 1));
  }
  return params;
}

bool ParseUrlDecimal(absl::string_view text, int64_t lo, int64_t hi,
                     int64_t* v) {
  const bool digits = !text.empty() && text.size() <= 18 &&
                      std::all_of(text.begin(), text.end(), [](char c) {
                        return absl::ascii_isdigit(c);
                      });
  return digits && absl::SimpleAtoi(text, v) && *v >= lo && *v <= hi;
}

absl::StatusOr<int64_t> UrlInt(absl::string_view store, absl::string_view url,
                               const UrlParam& param, int64_t lo, int64_t hi) {
  int64_t v = 0;
  if (ParseUrlDecimal(param.second, lo, hi, &v)) return v;
  return BadUrl(store, url,
                absl::StrCat("parameter ", param.first, "='", param.second,
                             "' is not a whole number in ", lo, "..", hi));
}

absl::StatusOr<bool> ApplyStoreParam(absl::string_view store,
                                     absl::string_view url,
                                     const UrlParam& param,
                                     CountsOptions* counts,
                                     EventLogOptions* events) {
  if (param.first == "events") {
    DQ_ASSIGN_OR_RETURN(events->max_events,
                        UrlInt(store, url, param, 0, 100'000'000));
    return true;
  }
  if (param.first == "counts") {
    if (param.second != "on" && param.second != "off") {
      return BadUrl(store, url,
                    absl::StrCat("counts must be 'on' or 'off', not '",
                                 param.second, "'"));
    }
    counts->enabled = param.second == "on";
    return true;
  }
  if (param.first == "counts_window_min") {
    DQ_ASSIGN_OR_RETURN(int64_t minutes,
                        UrlInt(store, url, param, 1, 366 * 24 * 60));
    counts->window = absl::Minutes(minutes);
    return true;
  }
  return false;
}

}  // namespace internal
}  // namespace delayq
