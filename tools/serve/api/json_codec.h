// Copyright delayq authors.
//
// How the HTTP API writes jobs, leases and errors as JSON and reads job
// options from it. The job object has the fields of `delayq get --json`.
//
// A payload travels as "payload" (a UTF-8 string) or "payload_base64" (any
// bytes); a reply uses the first when the payload is UTF-8, else the second.
// Durations are whole milliseconds ("delay_ms"), times RFC 3339 in UTC, and a
// lease's fencing token a decimal string (it does not fit a JSON number
// exactly).

#ifndef DELAYQ_TOOLS_SERVE_API_JSON_CODEC_H_
#define DELAYQ_TOOLS_SERVE_API_JSON_CODEC_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "delayq/batch.h"
#include "delayq/counts.h"
#include "delayq/event.h"
#include "delayq/event_log.h"
#include "delayq/job.h"
#include "delayq/schedule.h"
#include "nlohmann/json.hpp"

namespace delayq {
namespace serve {

using Json = nlohmann::json;

// The deepest nesting of arrays and objects a request body may have. The
// API's bodies need three levels; a deeper body is refused before it is
// parsed, because nlohmann's values copy and compare themselves
// recursively, and a connection thread's stack is small.
inline constexpr int kMaxJsonNesting = 32;

// Parses a request body. An empty body is an empty object; anything but a
// JSON object, or one nested deeper than kMaxJsonNesting, is
// InvalidArgument.
absl::StatusOr<Json> ParseBody(absl::string_view body);

// Whether the arrays and objects of JSON `text` nest at most `max_depth`
// deep (brackets inside strings do not count). Linear, no recursion; says
// nothing of whether `text` is valid JSON.
bool JsonNestingWithin(absl::string_view text, int max_depth);

// A JSON string of UTF-8 `text`: quotes, backslashes and control bytes
// escaped.
void AppendJsonString(const std::string& text, std::string* out);

// Jobs and leases are written straight to text, not built as Json values
// first: a reserve reply may hold a thousand of them.
void AppendJobJson(const Job& job, std::string* out);
void AppendLeaseJson(const Lease& lease, std::string* out);
// {"<name>": [<each item's JSON>]}.
template <typename T>
std::string JsonListText(absl::string_view name, absl::Span<const T> items,
                         void (*append)(const T&, std::string*)) {
  std::string out = absl::StrCat("{\"", name, "\":[");
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += ',';
    append(items[i], &out);
  }
  out += "]}";
  return out;
}
Json StatsToJson(absl::string_view topic, const TopicStats& stats, bool paused);

// {"now", "lateness_bounds_ms": [...], "minutes": [{"minute", "topic",
// "enqueued", "done", "failed", "retried", "expired", "dead", "lapsed",
// "lateness": [one count per bucket]}]}; times in RFC 3339 UTC.
std::string CountsJsonText(const std::vector<TopicMinute>& minutes,
                           absl::Time now);

// {"id", "completion_id", "closed", "total", "done", "dead", "cancelled",
// "pending", "complete"}.
Json BatchToJson(const Batch& batch);

// {"topic", "rate", "period_ms", "burst", "concurrency", "text"}.
Json LimitToJson(absl::string_view topic, const TopicLimit& limit);

// A TopicLimit from the fields rate, period_ms (default 1000), burst
// (default 1) and concurrency; the library checks the values.
absl::StatusOr<TopicLimit> LimitFromJson(const Json& object);

// A schedule with its next run; times are null when there is none.
Json ScheduleToJson(const ScheduleInfo& info);

// {"event": "failed", "at": TIME, "attempts": N, "error": "..."}; error
// only when there is one.
Json EventToJson(const Event& event);

// EventToJson() of the event, and "who": the process that made it.
Json LoggedEventToJson(const LoggedEvent& event);

// A time, or null for an infinite one.
Json TimeOrNull(absl::Time t);

// {"code": "NOT_FOUND", "message": "..."}: an error reply's body
// (ErrorBody() of http/error_reply.h), for an error inside a reply.
Json StatusToJson(const absl::Status& status);

// The reply of a request that acts on many items, each on its own:
// {`done_name`: how many succeeded, "errors": [{"id", "code", "message"}]
// for the others, in the order of the request}. `ids` and `outcomes` are
// of one length.
Json OutcomesJson(absl::string_view done_name,
                  absl::Span<const std::string> ids,
                  absl::Span<const absl::Status> outcomes);

// Bytes of `object` named `name`: its `name` string or its
// `name`_base64. InvalidArgument when both are given, the base64 is bad, or
// neither is given without `optional`; "" then.
absl::StatusOr<std::string> BytesFromJson(const Json& object,
                                          absl::string_view name,
                                          bool optional);

// BytesFromJson() of "payload".
inline absl::StatusOr<std::string> PayloadFromJson(const Json& object,
                                                   bool optional = false) {
  return BytesFromJson(object, "payload", optional);
}

// JobOptions from the fields id, delay_ms, run_at, ttr_ms, priority,
// max_attempts, backoff ("fixed:10s", "exp:1s:10m"), replace, expire_at,
// expire_after_ms, discard_expired, unique_for_ms, keep_for_ms,
// keep_at_most, after, on_dependency_failure and batch; absent
// fields keep their defaults. Unknown fields are refused, so a typo is not
// silently ignored; `also_allowed` names the route's own fields.
absl::StatusOr<JobOptions> JobOptionsFromJson(
    const Json& object, std::initializer_list<absl::string_view> also_allowed);

// The field `name` of `object`, or nullptr when it is absent or null (a
// null field means the same as an absent one).
const Json* Field(const Json& object, absl::string_view name);

// Typed field readers: the field's value, `fallback` when absent, or
// InvalidArgument naming the field when it has the wrong type or range.
absl::StatusOr<int64_t> IntField(const Json& object, absl::string_view name,
                                 int64_t fallback, int64_t min, int64_t max);
absl::StatusOr<std::string> StringField(const Json& object,
                                        absl::string_view name,
                                        absl::string_view fallback);

// A fencing token from the "token" field (a decimal string or number).
absl::StatusOr<uint64_t> TokenField(const Json& object);

// Refuses fields of `object` not in `allowed`.
absl::Status OnlyFields(const Json& object,
                        absl::Span<const absl::string_view> allowed);

}  // namespace serve
}  // namespace delayq

#endif  // DELAYQ_TOOLS_SERVE_API_JSON_CODEC_H_
