// Copyright delayq authors.
//
// The Redis backend's schedules: a hash per schedule, "{ns}:schedule:<name>",
// with one field per setting (below), and the set "{ns}:schedules" of their
// names. The scripts schedule_put, schedule_remove, schedules and
// schedule_fire read and write them.

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "backends/redis/backend_impl.h"
#include "backends/redis/internal/replies.h"
#include "backends/redis/internal/script_calls.h"
#include "src/common/contract_errors.h"
#include "src/common/status_macros.h"

namespace delayq {
namespace {

using redis_internal::ClampMicros;
using redis_internal::DurationMicros;
using redis_internal::Reply;
using redis_internal::Str;
using redis_internal::ToCall;
using redis_internal::Unexpected;
using redis_internal::Word;

// The fields of a schedule's hash that hold its definition, as field, value
// pairs. Times and durations are integer µs; backoff_kind 0 is fixed, 1
// exponential; missed is MissedPolicyName(). The scripts add done_through
// and revision.
std::vector<std::string> DefinitionFields(const ScheduleRecord& s) {
  const JobOptions& job = s.options.job;
  return {"spec",         s.spec,
          "time_zone",    s.options.time_zone,
          "topic",        s.topic,
          "payload",      s.payload,
          "priority",     absl::StrCat(job.priority),
          "max_attempts", absl::StrCat(job.max_attempts),
          "ttr",          absl::StrCat(DurationMicros(job.ttr)),
          "backoff_kind", job.backoff.kind == Backoff::Kind::kFixed ? "0" : "1",
          "backoff_base", absl::StrCat(DurationMicros(job.backoff.base)),
          "backoff_max",  absl::StrCat(DurationMicros(job.backoff.max)),
          "missed",       MissedPolicyName(s.options.missed),
          "jitter",       absl::StrCat(DurationMicros(s.options.jitter))};
}

// A schedule from its name and its hash's {field, value, ...}. False when a
// field is missing or malformed.
bool DecodeSchedule(const std::string& name, const redisReply* hash,
                    ScheduleRecord* out) {
  if (hash->type != REDIS_REPLY_ARRAY || hash->elements % 2 != 0) return false;
  absl::flat_hash_map<std::string, std::string> f;
  for (size_t i = 0; i + 1 < hash->elements; i += 2) {
    f[Str(hash->element[i])] = Str(hash->element[i + 1]);
  }
  auto integer = [&f](const char* field, int64_t* v) {
    auto it = f.find(field);
    return it != f.end() && absl::SimpleAtoi(it->second, v);
  };
  int64_t priority, max_attempts, ttr, kind, base, max, jitter, done, revision;
  if (!integer("priority", &priority) ||
      !integer("max_attempts", &max_attempts) || !integer("ttr", &ttr) ||
      !integer("backoff_kind", &kind) || !integer("backoff_base", &base) ||
      !integer("backoff_max", &max) || !integer("jitter", &jitter) ||
      !integer("done_through", &done) || !integer("revision", &revision) ||
      !ParseMissedPolicy(f["missed"], &out->options.missed)) {
    return false;
  }
  out->name = name;
  out->spec = f["spec"];
  out->options.time_zone = f["time_zone"];
  out->topic = f["topic"];
  out->payload = f["payload"];
  JobOptions& job = out->options.job;
  job.priority = static_cast<int>(priority);
  job.max_attempts = static_cast<int>(max_attempts);
  job.ttr = absl::Microseconds(ttr);
  job.backoff = kind == 0 ? Backoff::Fixed(absl::Microseconds(base))
                          : Backoff::Exponential(absl::Microseconds(base),
                                                 absl::Microseconds(max));
  out->options.jitter = absl::Microseconds(jitter);
  out->done_through = absl::FromUnixMicros(done);
  out->revision = revision;
  return true;
}

}  // namespace

absl::Status RedisBackend::PutSchedule(const ScheduleRecord& schedule,
                                       absl::Time now) {
  auto a = Keyed<redis_internal::SchedulePutArgs>();
  a.schedules = keys_.Schedules();
  a.schedule = keys_.Schedule(schedule.name);
  a.now = Micros(now);
  a.name = schedule.name;
  a.definition.values = DefinitionFields(schedule);
  return RunForOk(ToCall(std::move(a)), "");
}

absl::Status RedisBackend::RemoveSchedule(absl::string_view name,
                                          absl::Time now) {
  (void)now;
  auto a = Keyed<redis_internal::ScheduleRemoveArgs>();
  a.schedules = keys_.Schedules();
  a.schedule = keys_.Schedule(name);
  a.name = std::string(name);
  DQ_ASSIGN_OR_RETURN(Reply r, RunOne(ToCall(std::move(a))));
  const std::string word = Word(r.get());
  if (word == redis_internal::kNotFound) return internal::NoSuchSchedule(name);
  if (word != redis_internal::kOk)
    return Unexpected(r.get(), "schedule_remove");
  return absl::OkStatus();
}

absl::StatusOr<std::vector<ScheduleRecord>> RedisBackend::ListSchedules() {
  auto a = Keyed<redis_internal::SchedulesArgs>();
  a.schedules = keys_.Schedules();
  DQ_ASSIGN_OR_RETURN(Reply r, RunOne(ToCall(std::move(a))));
  const redisReply* reply = r.get();
  if (Word(reply) != redis_internal::kOk || reply->elements % 2 != 1) {
    return Unexpected(reply, "schedules");
  }
  std::vector<ScheduleRecord> out;
  out.reserve(reply->elements / 2);
  for (size_t i = 1; i + 1 < reply->elements; i += 2) {
    ScheduleRecord s;
    if (!DecodeSchedule(Str(reply->element[i]), reply->element[i + 1], &s)) {
      return Unexpected(reply, "schedules");
    }
    out.push_back(std::move(s));
  }
  std::sort(out.begin(), out.end(),
            [](const ScheduleRecord& a, const ScheduleRecord& b) {
              return a.name < b.name;
            });
  return out;
}

absl::Status RedisBackend::FireSchedule(absl::string_view name,
                                        int64_t revision, absl::Time through,
                                        absl::Span<const NewJob> jobs,
                                        absl::Time now) {
  auto a = Timed<redis_internal::ScheduleFireArgs>(now);
  a.schedule = keys_.Schedule(name);
  a.seq = keys_.Seq();
  a.topics = keys_.Topics();
  a.counts = counts_arg_;
  a.revision = absl::StrCat(revision);
  a.done_through = absl::StrCat(ClampMicros(through));
  AppendJobs(jobs, &a.batch);
  DQ_ASSIGN_OR_RETURN(Reply r, RunOne(ToCall(std::move(a))));
  const redisReply* reply = r.get();
  const std::string word = Word(reply);
  if (word == redis_internal::kOk) return absl::OkStatus();
  if (word == redis_internal::kNotFound) return internal::NoSuchSchedule(name);
  if (word == redis_internal::kMoved) return internal::ScheduleMoved(name);
  if (word == redis_internal::kExists && reply->elements == 2) {
    return internal::IdInUse(Str(reply->element[1]));
  }
  return Unexpected(reply, "schedule_fire");
}

}  // namespace delayq
