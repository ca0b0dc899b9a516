// Copyright delayq authors.
//
// Topics: their counts, kicking their dead jobs, pausing and resuming them.

#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tools/serve/api/json_codec.h"
#include "tools/serve/api/routes.h"

namespace delayq {
namespace serve {
namespace {

constexpr char kTopic[] = "/v1/topics/([^/]+)";

// The paused topics; none on a store that cannot pause.
absl::StatusOr<std::set<std::string>> Paused(Scheduler& scheduler) {
  absl::StatusOr<std::vector<std::string>> paused = scheduler.PausedTopics();
  if (absl::IsUnimplemented(paused.status())) return std::set<std::string>();
  if (!paused.ok()) return paused.status();
  return std::set<std::string>(paused->begin(), paused->end());
}

absl::StatusOr<Reply> TopicStatsReply(Scheduler& scheduler,
                                      const std::string& topic) {
  absl::StatusOr<std::set<std::string>> paused = Paused(scheduler);
  if (!paused.ok()) return paused.status();
  absl::StatusOr<TopicStats> stats = scheduler.Stats(topic);
  if (!stats.ok()) return stats.status();
  return Reply{200, StatsToJson(topic, *stats, paused->count(topic) > 0)};
}

// The topics an operator looks for: those with jobs, the paused and the
// limited ones, those a schedule fills, and those the store counted work
// of in the last hour (each on a store that keeps such things).
absl::StatusOr<std::set<std::string>> KnownTopics(
    Scheduler& scheduler, const std::set<std::string>& paused) {
  absl::StatusOr<std::vector<std::string>> topics = scheduler.Topics();
  if (!topics.ok()) return topics.status();
  std::set<std::string> names(topics->begin(), topics->end());
  names.insert(paused.begin(), paused.end());
  absl::StatusOr<std::vector<LimitedTopic>> limits = scheduler.Limits();
  if (!limits.ok() && !absl::IsUnimplemented(limits.status())) {
    return limits.status();
  }
  if (limits.ok()) {
    for (const LimitedTopic& l : *limits) names.insert(l.topic);
  }
  absl::StatusOr<std::vector<ScheduleInfo>> schedules = scheduler.Schedules();
  if (!schedules.ok() && !absl::IsUnimplemented(schedules.status())) {
    return schedules.status();
  }
  if (schedules.ok()) {
    for (const ScheduleInfo& s : *schedules) names.insert(s.record.topic);
  }
  absl::StatusOr<std::vector<TopicTotals>> recent =
      scheduler.RecentCounts(absl::Hours(1));
  if (!recent.ok() && !absl::IsUnimplemented(recent.status())) {
    return recent.status();
  }
  if (recent.ok()) {
    for (const TopicTotals& t : *recent) names.insert(t.topic);
  }
  return names;
}

// Every known topic with its counts.
absl::StatusOr<Reply> AllTopics(Scheduler& scheduler) {
  absl::StatusOr<std::set<std::string>> paused = Paused(scheduler);
  if (!paused.ok()) return paused.status();
  absl::StatusOr<std::set<std::string>> known = KnownTopics(scheduler, *paused);
  if (!known.ok()) return known.status();
  const std::set<std::string>& names = *known;
  Json list = Json::array();
  for (const std::string& topic : names) {
    absl::StatusOr<TopicStats> stats = scheduler.Stats(topic);
    if (!stats.ok()) return stats.status();
    list.push_back(StatsToJson(topic, *stats, paused->count(topic) > 0));
  }
  return Reply{200, Json{{"topics", std::move(list)}}};
}

}  // namespace

void AddTopicRoutes(Router& router, const RouteContext& context) {
  Scheduler& scheduler = *context.scheduler;
  router.Get("/v1/topics",
             [&scheduler](const Call&) { return AllTopics(scheduler); });
  router.Get(absl::StrCat(kTopic, "/stats"), [&scheduler](const Call& call) {
    return TopicStatsReply(scheduler, call.path[0]);
  });
  router.Post(absl::StrCat(kTopic, "/kick"),
              [&scheduler](const Call& call) -> absl::StatusOr<Reply> {
                if (absl::Status s = OnlyFields(call.body, {"max"}); !s.ok()) {
                  return s;
                }
                absl::StatusOr<int64_t> max =
                    IntField(call.body, "max", INT32_MAX, 0, INT32_MAX);
                if (!max.ok()) return max.status();
                absl::StatusOr<int> kicked =
                    scheduler.Kick(call.path[0], static_cast<int>(*max));
                if (!kicked.ok()) return kicked.status();
                return Reply{200, Json{{"kicked", *kicked}}};
              });
  router.Post(
      absl::StrCat(kTopic, "/purge"),
      [&scheduler](const Call& call) -> absl::StatusOr<Reply> {
        if (absl::Status s = OnlyFields(call.body, {"state", "max"}); !s.ok()) {
          return s;
        }
        absl::StatusOr<std::string> state = StringField(call.body, "state", "");
        if (!state.ok()) return state.status();
        if (*state != "dead") {
          return absl::InvalidArgumentError(
              "field 'state' must be \"dead\": only dead jobs can be "
              "purged");
        }
        absl::StatusOr<int64_t> max =
            IntField(call.body, "max", INT32_MAX, 0, INT32_MAX);
        if (!max.ok()) return max.status();
        absl::StatusOr<int> purged =
            scheduler.PurgeDead(call.path[0], static_cast<int>(*max));
        if (!purged.ok()) return purged.status();
        return Reply{200, Json{{"purged", *purged}}};
      });
  for (const bool pause : {true, false}) {
    router.PostAction(
        absl::StrCat(kTopic, pause ? "/pause" : "/resume"),
        [&scheduler, pause](const Call& call) -> absl::StatusOr<Reply> {
          const std::string& topic = call.path[0];
          absl::Status s =
              pause ? scheduler.Pause(topic) : scheduler.Resume(topic);
          if (!s.ok()) return s;
          return TopicStatsReply(scheduler, topic);
        });
  }
}

}  // namespace serve
}  // namespace delayq
