// Copyright delayq authors.
//
// A job's recent events, as this server's scheduler saw them (JobHistory).

#include <string>
#include <vector>

#include "tools/serve/api/json_codec.h"
#include "tools/serve/api/routes.h"

namespace delayq {
namespace serve {

void AddHistoryRoutes(Router& router, const RouteContext& context) {
  const JobHistory& history = *context.history;
  router.Get("/v1/jobs/(.+)/history", [&history](const Call& call) {
    Json events = Json::array();
    for (const Event& event : history.Of(call.path[0])) {
      events.push_back(EventToJson(event));
    }
    return absl::StatusOr<Reply>(
        Reply(200, Json{{"id", call.path[0]}, {"events", std::move(events)}}));
  });
}

}  // namespace serve
}  // namespace delayq
