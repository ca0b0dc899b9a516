// Copyright delayq authors.
//
// Topic limits: how fast, and how many at once, every process that shares
// the store reserves a topic's jobs (Scheduler::SetLimit()).

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tools/serve/api/json_codec.h"
#include "tools/serve/api/routes.h"

namespace delayq {
namespace serve {
namespace {

constexpr char kLimit[] = "/v1/topics/([^/]+)/limit";

absl::StatusOr<Reply> AllLimits(Scheduler& scheduler) {
  absl::StatusOr<std::vector<LimitedTopic>> limits = scheduler.Limits();
  if (!limits.ok()) return limits.status();
  Json list = Json::array();
  for (const LimitedTopic& t : *limits) {
    list.push_back(LimitToJson(t.topic, t.limit));
  }
  return Reply{200, Json{{"limits", std::move(list)}}};
}

absl::StatusOr<Reply> OneLimit(Scheduler& scheduler, const std::string& topic) {
  absl::StatusOr<std::vector<LimitedTopic>> limits = scheduler.Limits();
  if (!limits.ok()) return limits.status();
  for (const LimitedTopic& t : *limits) {
    if (t.topic == topic) return Reply{200, LimitToJson(t.topic, t.limit)};
  }
  return absl::NotFoundError(absl::StrCat("topic '", topic, "' has no limit"));
}

absl::StatusOr<Reply> SetLimit(Scheduler& scheduler, const Call& call) {
  absl::StatusOr<TopicLimit> limit = LimitFromJson(call.body);
  if (!limit.ok()) return limit.status();
  if (absl::Status s = scheduler.SetLimit(call.path[0], *limit); !s.ok()) {
    return s;
  }
  return Reply{200, LimitToJson(call.path[0], *limit)};
}

}  // namespace

void AddLimitRoutes(Router& router, const RouteContext& context) {
  Scheduler& scheduler = *context.scheduler;
  router.Get("/v1/limits",
             [&scheduler](const Call&) { return AllLimits(scheduler); });
  router.Get(kLimit, [&scheduler](const Call& call) {
    return OneLimit(scheduler, call.path[0]);
  });
  router.Put(kLimit, [&scheduler](const Call& call) {
    return SetLimit(scheduler, call);
  });
  router.Delete(
      kLimit, [&scheduler](const Call& call) -> absl::StatusOr<Reply> {
        if (absl::Status s = scheduler.ClearLimit(call.path[0]); !s.ok()) {
          return s;
        }
        return Reply{};
      });
}

}  // namespace serve
}  // namespace delayq
