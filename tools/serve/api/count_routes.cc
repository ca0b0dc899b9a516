// Copyright delayq authors.
//
// GET /v1/counts: what the store counted per topic and minute (see
// delayq/counts.h), the same whichever server is asked; the dashboard's
// chart reads it.

#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "tools/serve/api/json_codec.h"
#include "tools/serve/api/routes.h"

namespace delayq {
namespace serve {
namespace {

// The longest span one request may ask for: a week of minutes.
constexpr int kMaxMinutes = 7 * 24 * 60;

absl::StatusOr<Reply> CountsReply(Scheduler& scheduler, const Call& call) {
  int minutes = 60;
  const std::string minutes_text = call.Query("minutes");
  if (!minutes_text.empty() && (!absl::SimpleAtoi(minutes_text, &minutes) ||
                                minutes < 1 || minutes > kMaxMinutes)) {
    return absl::InvalidArgumentError(
        absl::StrCat("minutes must be a whole number from 1 to ", kMaxMinutes));
  }
  const std::string topic = call.Query("topic");
  // The minutes that end in this one: `minutes` of them, this one included.
  const absl::Time now = scheduler.clock().Now();
  absl::StatusOr<std::vector<TopicMinute>> counted =
      scheduler.Counts(MinuteOf(now) - absl::Minutes(minutes - 1), now);
  if (!counted.ok()) return counted.status();
  std::vector<TopicMinute> shown;
  for (TopicMinute& m : *counted) {
    if (topic.empty() || m.topic == topic) shown.push_back(std::move(m));
  }
  return Reply::Text(200, CountsJsonText(shown, now));
}

}  // namespace

void AddCountRoutes(Router& router, const RouteContext& context) {
  Scheduler& scheduler = *context.scheduler;
  router.Get(
      "/v1/counts",
      [&scheduler](const Call& call) { return CountsReply(scheduler, call); },
      {"minutes", "topic"});
}

}  // namespace serve
}  // namespace delayq
