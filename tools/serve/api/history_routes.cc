// Copyright delayq authors.
//
// A job's events from the store's event log (delayq/event_log.h): what
// every process that shares the store did to it, this server or not.

#include <string>
#include <vector>

#include "tools/serve/api/json_codec.h"
#include "tools/serve/api/routes.h"

namespace delayq {
namespace serve {
namespace {

// The most events a history shows: a job's life is three or four events,
// more for one that failed and was retried.
constexpr int kHistoryEvents = 200;

}  // namespace

void AddHistoryRoutes(Router& router, const RouteContext& context) {
  Scheduler& scheduler = *context.scheduler;
  router.Get("/v1/jobs/([^/]+)/history", [&scheduler](const Call& call) {
    if (absl::Status s = Scheduler::CheckJobId(call.path[0]); !s.ok()) {
      return absl::StatusOr<Reply>(s);
    }
    // What this server did is in the log before it is read, so a client
    // that acked a job here reads its own ack; other processes' events are
    // there once their writers have written them.
    if (absl::Status s = scheduler.FlushEventLog(); !s.ok()) {
      return absl::StatusOr<Reply>(s);
    }
    absl::StatusOr<std::vector<LoggedEvent>> logged =
        scheduler.backend().JobEvents(call.path[0], kHistoryEvents);
    if (!logged.ok()) return absl::StatusOr<Reply>(logged.status());
    Json events = Json::array();
    for (const LoggedEvent& event : *logged) {
      events.push_back(LoggedEventToJson(event));
    }
    return absl::StatusOr<Reply>(
        Reply(200, Json{{"id", call.path[0]}, {"events", std::move(events)}}));
  });
}

}  // namespace serve
}  // namespace delayq
