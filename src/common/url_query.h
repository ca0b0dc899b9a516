// Copyright delayq authors.
//
// The query of a store URL ("?name=value&name=value"), split and checked the
// same way for every store, and the one wording of a bad URL.

#ifndef DELAYQ_SRC_COMMON_URL_QUERY_H_
#define DELAYQ_SRC_COMMON_URL_QUERY_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "delayq/counts.h"
#include "delayq/event_log.h"

namespace delayq {
namespace internal {

// InvalidArgument "<store> URL '<url, password hidden>': <why>".
absl::Status BadUrl(absl::string_view store, absl::string_view url,
                    absl::string_view why);

using UrlParam = std::pair<absl::string_view, absl::string_view>;

// The parameters of `query` (the text after '?'), in order. Every parameter
// has a name, a '=' and a non-empty value, and no name comes twice; errors
// are BadUrl(store, url, ...). An empty query has no parameters.
absl::StatusOr<std::vector<UrlParam>> SplitUrlQuery(absl::string_view store,
                                                    absl::string_view url,
                                                    absl::string_view query);

// `text` as a decimal integer in [lo, hi], digits only; false otherwise.
bool ParseUrlDecimal(absl::string_view text, int64_t lo, int64_t hi,
                     int64_t* v);

// `param`'s value as a decimal integer in [lo, hi] (digits only), or BadUrl
// saying so.
absl::StatusOr<int64_t> UrlInt(absl::string_view store, absl::string_view url,
                               const UrlParam& param, int64_t lo, int64_t hi);

// The parameters every store takes: for its counts, `counts=on|off` and
// `counts_window_min=N` (1 to 527040, a year of minutes); for its event log,
// `events=N` (0 to 100,000,000; 0 turns it off). Applies `param` to
// `counts` or `events` and returns true when it is one of them; BadUrl for a
// bad value.
absl::StatusOr<bool> ApplyStoreParam(absl::string_view store,
                                     absl::string_view url,
                                     const UrlParam& param,
                                     CountsOptions* counts,
                                     EventLogOptions* events);

// The names ApplyStoreParam() takes, for "known: ..." lists.
inline constexpr absl::string_view kStoreParams =
    "counts, counts_window_min, events";

}  // namespace internal
}  // namespace delayq

#endif  // DELAYQ_SRC_COMMON_URL_QUERY_H_
