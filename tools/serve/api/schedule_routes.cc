// Copyright delayq authors.
//
// Periodic schedules kept in the store (Scheduler::Schedule()).

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "delayq/schedule.h"
#include "tools/serve/api/json_codec.h"
#include "tools/serve/api/routes.h"

namespace delayq {
namespace serve {
namespace {

constexpr char kSchedule[] = "/v1/schedules/([^/]+)";

absl::StatusOr<Reply> AllSchedules(Scheduler& scheduler) {
  absl::StatusOr<std::vector<ScheduleInfo>> all = scheduler.Schedules();
  if (!all.ok()) return all.status();
  Json list = Json::array();
  for (const ScheduleInfo& info : *all) list.push_back(ScheduleToJson(info));
  return Reply{200, Json{{"schedules", std::move(list)}}};
}

absl::StatusOr<Reply> OneSchedule(Scheduler& scheduler,
                                  const std::string& name) {
  absl::StatusOr<std::vector<ScheduleInfo>> all = scheduler.Schedules();
  if (!all.ok()) return all.status();
  for (const ScheduleInfo& info : *all) {
    if (info.record.name == name) return Reply{200, ScheduleToJson(info)};
  }
  return absl::NotFoundError(absl::StrCat("no schedule is named '", name, "'"));
}

// ScheduleOptions from the body: time_zone, missed ("skip", "once",
// "all:N"), jitter_ms and the job's priority, ttr_ms, max_attempts and
// backoff.
absl::StatusOr<ScheduleOptions> OptionsFromJson(const Json& body) {
  ScheduleOptions options;
  absl::StatusOr<JobOptions> job =
      JobOptionsFromJson(body, {"spec", "topic", "payload", "payload_base64",
                                "time_zone", "missed", "jitter_ms"});
  if (!job.ok()) return job.status();
  options.job = *std::move(job);
  absl::StatusOr<std::string> zone =
      StringField(body, "time_zone", options.time_zone);
  if (!zone.ok()) return zone.status();
  options.time_zone = *std::move(zone);
  absl::StatusOr<std::string> missed = StringField(body, "missed", "skip");
  if (!missed.ok()) return missed.status();
  if (!ParseMissedPolicy(*missed, &options.missed)) {
    return absl::InvalidArgumentError(
        absl::StrCat("field 'missed' must be skip, once or all:N (N from 1 to ",
                     kMaxMissedRuns, ")"));
  }
  absl::StatusOr<int64_t> jitter_ms =
      IntField(body, "jitter_ms", 0, 0, INT64_MAX / 1'000'000);
  if (!jitter_ms.ok()) return jitter_ms.status();
  options.jitter = absl::Milliseconds(*jitter_ms);
  return options;
}

// Stores the schedule; replies it as stored, with its next run.
absl::StatusOr<Reply> PutSchedule(Scheduler& scheduler, const Call& call) {
  absl::StatusOr<ScheduleOptions> options = OptionsFromJson(call.body);
  if (!options.ok()) return options.status();
  absl::StatusOr<std::string> spec = StringField(call.body, "spec", "");
  if (!spec.ok()) return spec.status();
  absl::StatusOr<std::string> topic = StringField(call.body, "topic", "");
  if (!topic.ok()) return topic.status();
  if (spec->empty() || topic->empty()) {
    return absl::InvalidArgumentError(
        "a schedule needs a 'spec' (cron or @every) and a 'topic'");
  }
  absl::StatusOr<std::string> payload =
      PayloadFromJson(call.body, /*optional=*/true);
  if (!payload.ok()) return payload.status();
  const std::string& name = call.path[0];
  if (absl::Status s =
          scheduler.Schedule(name, *spec, *topic, *payload, *options);
      !s.ok()) {
    return s;
  }
  return OneSchedule(scheduler, name);
}

}  // namespace

void AddScheduleRoutes(Router& router, const RouteContext& context) {
  Scheduler& scheduler = *context.scheduler;
  router.Get("/v1/schedules",
             [&scheduler](const Call&) { return AllSchedules(scheduler); });
  router.Get(kSchedule, [&scheduler](const Call& call) {
    return OneSchedule(scheduler, call.path[0]);
  });
  router.Put(kSchedule, [&scheduler](const Call& call) {
    return PutSchedule(scheduler, call);
  });
  router.Delete(
      kSchedule, [&scheduler](const Call& call) -> absl::StatusOr<Reply> {
        if (absl::Status s = scheduler.Unschedule(call.path[0]); !s.ok()) {
          return s;
        }
        return Reply{};
      });
}

}  // namespace serve
}  // namespace delayq
