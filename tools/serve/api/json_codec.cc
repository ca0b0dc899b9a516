// Copyright delayq authors.

#include "tools/serve/api/json_codec.h"

#include <algorithm>
#include <limits>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "tools/common/values.h"
#include "tools/serve/http/error_reply.h"

namespace delayq {
namespace serve {
namespace {

// "name": text, or "name_base64": bytes that are not UTF-8.
void PutText(Json& object, const std::string& name, absl::string_view text) {
  if (cli::IsUtf8(text)) {
    object[name] = std::string(text);
  } else {
    object[name + "_base64"] = absl::Base64Escape(text);
  }
}

absl::Status BadField(absl::string_view name, absl::string_view expected) {
  return absl::InvalidArgumentError(
      absl::StrCat("field '", name, "' must be ", expected));
}

absl::StatusOr<absl::Duration> MillisField(const Json& object,
                                           absl::string_view name,
                                           absl::Duration fallback) {
  const int64_t kMax = int64_t{100} * 365 * 24 * 3600 * 1000;  // a century
  absl::StatusOr<int64_t> ms =
      IntField(object, name, absl::ToInt64Milliseconds(fallback), 0, kMax);
  if (!ms.ok()) return ms.status();
  return absl::Milliseconds(*ms);
}

// An RFC 3339 time, or `fallback` when the field is absent.
absl::StatusOr<absl::Time> TimeField(const Json& object, absl::string_view name,
                                     absl::Time fallback) {
  const Json* value = Field(object, name);
  if (value == nullptr) return fallback;
  if (!value->is_string()) return BadField(name, "an RFC 3339 time");
  return cli::ParseTimeValue(std::string(name), value->get<std::string>());
}

absl::StatusOr<bool> BoolField(const Json& object, absl::string_view name,
                               bool fallback) {
  const Json* value = Field(object, name);
  if (value == nullptr) return fallback;
  if (!value->is_boolean()) return BadField(name, "true or false");
  return value->get<bool>();
}

}  // namespace

const Json* Field(const Json& object, absl::string_view name) {
  auto it = object.find(std::string(name));
  return it == object.end() || it->is_null() ? nullptr : &*it;
}

bool JsonNestingWithin(absl::string_view text, int max_depth) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;  // the escaped character, whatever it is
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) return false;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return true;
}

absl::StatusOr<Json> ParseBody(absl::string_view body) {
  if (body.empty()) return Json::object();
  if (!JsonNestingWithin(body, kMaxJsonNesting)) {
    return absl::InvalidArgumentError(
        absl::StrCat("the request body nests arrays and objects more than ",
                     kMaxJsonNesting, " deep"));
  }
  Json json = Json::parse(body.begin(), body.end(), nullptr,
                          /*allow_exceptions=*/false);
  if (json.is_discarded()) {
    return absl::InvalidArgumentError("the request body is not valid JSON");
  }
  if (!json.is_object()) {
    return absl::InvalidArgumentError("the request body must be a JSON object");
  }
  return json;
}

namespace {

// A JSON string: quotes, backslashes and control bytes escaped; the rest
// (UTF-8) as is, copied in runs between the bytes to escape.
void AppendString(absl::string_view text, std::string* out) {
  out->push_back('"');
  size_t copied = 0;  // text[0, copied) is in `out`
  for (size_t i = 0; i < text.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    out->append(text.data() + copied, i - copied);
    copied = i + 1;
    switch (c) {
      case '"':
        out->append("\\\"");
        break;
      case '\\':
        out->append("\\\\");
        break;
      case '\n':
        out->append("\\n");
        break;
      case '\r':
        out->append("\\r");
        break;
      case '\t':
        out->append("\\t");
        break;
      default:
        absl::StrAppend(out, "\\u00", absl::Hex(c, absl::kZeroPad2));
    }
  }
  out->append(text.data() + copied, text.size() - copied);
  out->push_back('"');
}

// ,"name":"text" or, for bytes that are not UTF-8, ,"name_base64":"...".
void AppendTextField(absl::string_view name, absl::string_view text,
                     std::string* out) {
  const bool utf8 = cli::IsUtf8(text);
  absl::StrAppend(out, ",\"", name, utf8 ? "\":" : "_base64\":");
  AppendString(utf8 ? text : absl::Base64Escape(text), out);
}

// The backoff's text, as a JSON string. Most jobs have the default, whose
// text is made once (formatting two durations per lease was a tenth of
// writing a reserve's reply).
void AppendBackoff(const Backoff& backoff, std::string* out) {
  static const std::string* const kDefault =
      new std::string(cli::BackoffText(Backoff()));
  if (backoff == Backoff()) {
    AppendString(*kDefault, out);
  } else {
    AppendString(cli::BackoffText(backoff), out);
  }
}

// ,"after":["id",...], or, when an id is not UTF-8, ,"after_base64":[...]
// with every id in base64; nothing for a job without dependencies.
void AppendAfter(const std::vector<std::string>& after, std::string* out) {
  if (after.empty()) return;
  const bool utf8 =
      std::all_of(after.begin(), after.end(),
                  [](const std::string& id) { return cli::IsUtf8(id); });
  out->append(utf8 ? ",\"after\":[" : ",\"after_base64\":[");
  for (size_t i = 0; i < after.size(); ++i) {
    if (i > 0) out->push_back(',');
    AppendString(utf8 ? after[i] : absl::Base64Escape(after[i]), out);
  }
  out->push_back(']');
}

void AppendTimeField(absl::string_view name, absl::Time t, std::string* out) {
  absl::StrAppend(out, ",\"", name, "\":\"");
  cli::AppendUtcText(t, out);
  out->push_back('"');
}

}  // namespace

void AppendJsonString(const std::string& text, std::string* out) {
  AppendString(text, out);
}

void AppendJobJson(const Job& job, std::string* out) {
  absl::StrAppend(out, "{\"state\":\"", JobStateName(job.state), "\"");
  AppendTextField("id", job.id, out);
  AppendTextField("topic", job.topic, out);
  absl::StrAppend(
      out, ",\"priority\":", job.priority, ",\"attempts\":", job.attempts,
      ",\"max_attempts\":", job.max_attempts,
      ",\"ttr_ms\":", absl::ToInt64Milliseconds(job.ttr), ",\"backoff\":");
  AppendBackoff(job.backoff, out);
  AppendTimeField("enqueued_at", job.enqueued_at, out);
  AppendTimeField("run_at", job.run_at, out);
  if (job.state == JobState::kReserved) {
    AppendTimeField("deadline", job.deadline, out);
    // Who holds the lease and since when (a lease made before the store
    // kept them has neither).
    AppendTextField("holder", job.holder, out);
    if (job.reserved_at != absl::InfinitePast()) {
      AppendTimeField("reserved_at", job.reserved_at, out);
    } else {
      out->append(",\"reserved_at\":null");
    }
  } else {
    out->append(",\"deadline\":null");
  }
  if (job.finished_at != absl::InfinitePast()) {
    AppendTimeField("finished_at", job.finished_at, out);
  } else {
    out->append(",\"finished_at\":null");
  }
  if (job.keep_for > absl::ZeroDuration()) {
    absl::StrAppend(
        out, ",\"keep_for_ms\":", absl::ToInt64Milliseconds(job.keep_for),
        ",\"keep_at_most\":", job.keep_at_most);
  }
  // Expiry and the dedup window only when the job has them.
  if (job.expire_at != absl::InfiniteFuture()) {
    AppendTimeField("expire_at", job.expire_at, out);
    if (job.discard_expired) out->append(",\"discard_expired\":true");
  }
  if (job.unique_for > absl::ZeroDuration()) {
    absl::StrAppend(
        out, ",\"unique_for_ms\":", absl::ToInt64Milliseconds(job.unique_for));
  }
  AppendAfter(job.after, out);
  AppendTextField("last_error", job.last_error, out);
  if (job.state == JobState::kDone) AppendTextField("result", job.result, out);
  AppendTextField("payload", job.payload, out);
  out->push_back('}');
}

void AppendLeaseJson(const Lease& lease, std::string* out) {
  out->append("{\"job\":");
  AppendJobJson(lease.job, out);
  absl::StrAppend(out, ",\"token\":\"", lease.token, "\"");
  AppendTimeField("deadline", lease.deadline, out);
  // Only a job whose dependencies left results has the list.
  if (!lease.dependency_results.empty()) {
    out->append(",\"dependency_results\":[");
    const char* comma = "";
    for (const auto& [id, result] : lease.dependency_results) {
      absl::StrAppend(out, comma, "{");
      // AppendTextField() opens with a comma, which the first field drops.
      const size_t first = out->size();
      AppendTextField("id", id, out);
      out->erase(first, 1);
      AppendTextField("result", result, out);
      out->push_back('}');
      comma = ",";
    }
    out->push_back(']');
  }
  out->push_back('}');
}

Json StatsToJson(absl::string_view topic, const TopicStats& stats,
                 bool paused) {
  Json out = Json::object();
  PutText(out, "topic", topic);
  out["delayed"] = stats.delayed;
  out["ready"] = stats.ready;
  out["reserved"] = stats.reserved;
  out["dead"] = stats.dead;
  out["done"] = stats.done;
  out["waiting"] = stats.waiting;
  out["paused"] = paused;
  return out;
}

std::string CountsJsonText(const std::vector<TopicMinute>& minutes,
                           absl::Time now) {
  std::string out = "{\"now\":\"";
  cli::AppendUtcText(now, &out);
  out += "\",\"lateness_bounds_ms\":[";
  for (size_t i = 0; i < kLatenessBoundsMicros.size(); ++i) {
    absl::StrAppend(&out, i > 0 ? "," : "", kLatenessBoundsMicros[i] / 1000);
  }
  out += "],\"minutes\":[";
  for (size_t i = 0; i < minutes.size(); ++i) {
    const TopicMinute& m = minutes[i];
    const JobCounts& c = m.counts;
    absl::StrAppend(&out, i > 0 ? "," : "", "{\"minute\":\"");
    cli::AppendUtcText(m.minute, &out);
    out += "\",\"topic\":";
    AppendString(m.topic, &out);
    absl::StrAppend(&out, ",\"enqueued\":", c.enqueued, ",\"done\":", c.done,
                    ",\"failed\":", c.failed, ",\"retried\":", c.retried,
                    ",\"expired\":", c.expired, ",\"dead\":", c.dead,
                    ",\"lapsed\":", c.lapsed, ",\"lateness\":[",
                    absl::StrJoin(c.lateness, ","), "]}");
  }
  out += "]}";
  return out;
}

Json BatchToJson(const Batch& batch) {
  Json out = Json::object();
  PutText(out, "id", batch.id);
  PutText(out, "completion_id", batch.completion_id);
  out["closed"] = batch.closed;
  out["total"] = batch.total;
  out["done"] = batch.done;
  out["dead"] = batch.dead;
  out["cancelled"] = batch.cancelled;
  out["pending"] = batch.pending();
  out["complete"] = batch.complete();
  return out;
}

Json LimitToJson(absl::string_view topic, const TopicLimit& limit) {
  Json out = Json::object();
  PutText(out, "topic", topic);
  out["rate"] = limit.rate;
  out["period_ms"] = absl::ToInt64Milliseconds(limit.period);
  out["burst"] = limit.burst;
  out["concurrency"] = limit.concurrency;
  out["text"] = cli::LimitText(limit);
  return out;
}

absl::StatusOr<TopicLimit> LimitFromJson(const Json& object) {
  if (absl::Status s =
          OnlyFields(object, {"rate", "period_ms", "burst", "concurrency"});
      !s.ok()) {
    return s;
  }
  TopicLimit limit;
  absl::StatusOr<int64_t> rate = IntField(object, "rate", 0, 0, INT64_MAX);
  if (!rate.ok()) return rate.status();
  limit.rate = *rate;
  absl::StatusOr<absl::Duration> period =
      MillisField(object, "period_ms", limit.period);
  if (!period.ok()) return period.status();
  limit.period = *period;
  absl::StatusOr<int64_t> burst = IntField(object, "burst", 1, 0, INT64_MAX);
  if (!burst.ok()) return burst.status();
  limit.burst = *burst;
  absl::StatusOr<int64_t> concurrency =
      IntField(object, "concurrency", 0, 0, INT64_MAX);
  if (!concurrency.ok()) return concurrency.status();
  limit.concurrency = *concurrency;
  return limit;
}

Json EventToJson(const Event& event) {
  Json out = Json::object();
  out["event"] = std::string(EventTypeName(event.type));
  out["at"] = cli::UtcText(event.at);
  out["attempts"] = event.attempts;
  if (!event.error.empty()) PutText(out, "error", event.error);
  return out;
}

Json LoggedEventToJson(const LoggedEvent& event) {
  Json out = EventToJson(EventFromLog(event));
  PutText(out, "who", event.who);
  return out;
}

Json TimeOrNull(absl::Time t) {
  if (t == absl::InfinitePast() || t == absl::InfiniteFuture()) return nullptr;
  return cli::UtcText(t);
}

Json ScheduleToJson(const ScheduleInfo& info) {
  const ScheduleRecord& r = info.record;
  const JobOptions& job = r.options.job;
  Json out = Json::object();
  out["name"] = r.name;
  PutText(out, "spec", r.spec);
  PutText(out, "topic", r.topic);
  PutText(out, "payload", r.payload);
  PutText(out, "time_zone", r.options.time_zone);
  out["missed"] = MissedPolicyName(r.options.missed);
  out["jitter_ms"] = absl::ToInt64Milliseconds(r.options.jitter);
  out["priority"] = job.priority;
  out["ttr_ms"] = absl::ToInt64Milliseconds(job.ttr);
  out["max_attempts"] = job.max_attempts;
  out["backoff"] = cli::BackoffText(job.backoff);
  out["done_through"] = TimeOrNull(r.done_through);
  out["next_run"] = TimeOrNull(info.next_run);
  out["revision"] = r.revision;
  return out;
}

Json StatusToJson(const absl::Status& status) {
  return Json::parse(ErrorBody(status));
}

Json OutcomesJson(absl::string_view done_name,
                  absl::Span<const std::string> ids,
                  absl::Span<const absl::Status> outcomes) {
  int done = 0;
  Json errors = Json::array();
  for (size_t i = 0; i < outcomes.size(); ++i) {
    if (outcomes[i].ok()) {
      ++done;
      continue;
    }
    Json error = StatusToJson(outcomes[i]);
    error["id"] = ids[i];
    errors.push_back(std::move(error));
  }
  return Json{{std::string(done_name), done}, {"errors", std::move(errors)}};
}

absl::StatusOr<std::string> BytesFromJson(const Json& object,
                                          absl::string_view name,
                                          bool optional) {
  const std::string base64_name = absl::StrCat(name, "_base64");
  const Json* text = Field(object, name);
  const Json* base64 = Field(object, base64_name);
  if (optional && text == nullptr && base64 == nullptr) return std::string();
  if ((text == nullptr) == (base64 == nullptr)) {
    return absl::InvalidArgumentError(
        absl::StrCat("give the ", name, " as exactly one of '", name,
                     "' (text) and '", base64_name, "'"));
  }
  if (text != nullptr) {
    if (!text->is_string()) return BadField(name, "a string");
    return text->get<std::string>();
  }
  if (!base64->is_string()) return BadField(base64_name, "a string");
  std::string bytes;
  if (!absl::Base64Unescape(base64->get<std::string>(), &bytes)) {
    return BadField(base64_name, "base64");
  }
  return bytes;
}

absl::StatusOr<int64_t> IntField(const Json& object, absl::string_view name,
                                 int64_t fallback, int64_t min, int64_t max) {
  const Json* field = Field(object, name);
  if (field == nullptr) return fallback;
  if (!field->is_number_integer()) return BadField(name, "a whole number");
  // Read as unsigned too, so a value past int64 is refused, not wrapped.
  if (field->is_number_unsigned() &&
      field->get<uint64_t>() >
          static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return BadField(name, absl::StrCat("from ", min, " to ", max));
  }
  const int64_t value = field->get<int64_t>();
  if (value < min || value > max) {
    return BadField(name, absl::StrCat("from ", min, " to ", max));
  }
  return value;
}

absl::StatusOr<std::string> StringField(const Json& object,
                                        absl::string_view name,
                                        absl::string_view fallback) {
  const Json* field = Field(object, name);
  if (field == nullptr) return std::string(fallback);
  if (!field->is_string()) return BadField(name, "a string");
  return field->get<std::string>();
}

absl::StatusOr<uint64_t> TokenField(const Json& object) {
  const Json* field = Field(object, "token");
  if (field == nullptr) {
    return absl::InvalidArgumentError(
        "field 'token' (the lease's fencing token) is required");
  }
  if (field->is_number_unsigned()) return field->get<uint64_t>();
  uint64_t token = 0;
  if (!field->is_string() ||
      !absl::SimpleAtoi(field->get<std::string>(), &token)) {
    return BadField("token", "the lease's token, a decimal string");
  }
  return token;
}

absl::Status OnlyFields(const Json& object,
                        absl::Span<const absl::string_view> allowed) {
  for (auto it = object.begin(); it != object.end(); ++it) {
    if (std::find(allowed.begin(), allowed.end(),
                  absl::string_view(it.key())) == allowed.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown field '", cli::Preview(it.key(), 64), "'"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<JobOptions> JobOptionsFromJson(
    const Json& object, std::initializer_list<absl::string_view> also_allowed) {
  std::vector<absl::string_view> allowed = {"id",
                                            "delay_ms",
                                            "run_at",
                                            "ttr_ms",
                                            "priority",
                                            "max_attempts",
                                            "backoff",
                                            "replace",
                                            "expire_at",
                                            "expire_after_ms",
                                            "discard_expired",
                                            "unique_for_ms",
                                            "keep_for_ms",
                                            "keep_at_most",
                                            "after",
                                            "on_dependency_failure",
                                            "batch"};
  allowed.insert(allowed.end(), also_allowed.begin(), also_allowed.end());
  if (absl::Status s = OnlyFields(object, allowed); !s.ok()) return s;
  JobOptions options;
  absl::StatusOr<std::string> id = StringField(object, "id", "");
  if (!id.ok()) return id.status();
  options.id = *std::move(id);
  absl::StatusOr<absl::Duration> delay =
      MillisField(object, "delay_ms", options.delay);
  if (!delay.ok()) return delay.status();
  options.delay = *delay;
  absl::StatusOr<absl::Duration> ttr =
      MillisField(object, "ttr_ms", options.ttr);
  if (!ttr.ok()) return ttr.status();
  options.ttr = *ttr;
  absl::StatusOr<int64_t> priority = IntField(
      object, "priority", options.priority, std::numeric_limits<int>::min(),
      std::numeric_limits<int>::max());
  if (!priority.ok()) return priority.status();
  options.priority = static_cast<int>(*priority);
  absl::StatusOr<int64_t> attempts = IntField(
      object, "max_attempts", options.max_attempts,
      std::numeric_limits<int>::min(), std::numeric_limits<int>::max());
  if (!attempts.ok()) return attempts.status();
  options.max_attempts = static_cast<int>(*attempts);
  absl::StatusOr<absl::Time> run_at =
      TimeField(object, "run_at", options.run_at);
  if (!run_at.ok()) return run_at.status();
  options.run_at = *run_at;
  if (const Json* backoff = Field(object, "backoff"); backoff != nullptr) {
    if (!backoff->is_string()) return BadField("backoff", "a string");
    absl::StatusOr<Backoff> b =
        cli::ParseBackoffValue(backoff->get<std::string>());
    if (!b.ok()) return b.status();
    options.backoff = *b;
  }
  absl::StatusOr<bool> replace = BoolField(object, "replace", options.replace);
  if (!replace.ok()) return replace.status();
  options.replace = *replace;
  absl::StatusOr<absl::Time> expire_at =
      TimeField(object, "expire_at", options.expire_at);
  if (!expire_at.ok()) return expire_at.status();
  options.expire_at = *expire_at;
  // Absent: never (an infinite duration has no number of milliseconds).
  if (Field(object, "expire_after_ms") != nullptr) {
    absl::StatusOr<absl::Duration> expire_after =
        MillisField(object, "expire_after_ms", absl::ZeroDuration());
    if (!expire_after.ok()) return expire_after.status();
    options.expire_after = *expire_after;
  }
  absl::StatusOr<bool> discard =
      BoolField(object, "discard_expired", options.discard_expired);
  if (!discard.ok()) return discard.status();
  options.discard_expired = *discard;
  absl::StatusOr<absl::Duration> unique_for =
      MillisField(object, "unique_for_ms", options.unique_for);
  if (!unique_for.ok()) return unique_for.status();
  options.unique_for = *unique_for;
  absl::StatusOr<absl::Duration> keep_for =
      MillisField(object, "keep_for_ms", options.keep_for);
  if (!keep_for.ok()) return keep_for.status();
  options.keep_for = *keep_for;
  absl::StatusOr<std::string> batch = StringField(object, "batch", "");
  if (!batch.ok()) return batch.status();
  options.batch = *std::move(batch);
  absl::StatusOr<int64_t> keep_at_most =
      IntField(object, "keep_at_most", 0, 0, kMaxDonePerTopic);
  if (!keep_at_most.ok()) return keep_at_most.status();
  options.keep_at_most = static_cast<int>(*keep_at_most);
  if (const Json* after = Field(object, "after"); after != nullptr) {
    if (!after->is_array()) return BadField("after", "an array of job ids");
    for (const Json& id : *after) {
      if (!id.is_string()) return BadField("after", "an array of job ids");
      options.after.push_back(id.get<std::string>());
    }
  }
  if (const Json* policy = Field(object, "on_dependency_failure");
      policy != nullptr) {
    if (!policy->is_string() ||
        !ParseDependencyFailure(policy->get<std::string>(),
                                &options.on_dependency_failure)) {
      return BadField("on_dependency_failure",
                      "\"fail\", \"cancel\" or \"run\"");
    }
  }
  return options;
}

}  // namespace serve
}  // namespace delayq
