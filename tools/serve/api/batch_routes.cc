// Copyright delayq authors.
//
// Batches: a group of jobs and the completion job that runs once all of
// them have finished (delayq/batch.h).

#include <string>

#include "tools/serve/api/json_codec.h"
#include "tools/serve/api/routes.h"

namespace delayq {
namespace serve {
namespace {

constexpr char kBatch[] = "/v1/batches/([^/]+)";

// The batch as it is now, with `status` (201 for one just opened).
absl::StatusOr<Reply> BatchReply(Scheduler& scheduler, const std::string& id,
                                 int status = 200) {
  absl::StatusOr<Batch> batch = scheduler.GetBatch(id);
  if (!batch.ok()) return batch.status();
  return Reply{status, BatchToJson(*batch)};
}

// {"topic", "payload" or "payload_base64", and the completion job's
// options as the add route takes them}.
absl::StatusOr<Reply> Open(Scheduler& scheduler, const Call& call) {
  absl::StatusOr<JobOptions> options =
      JobOptionsFromJson(call.body, {"topic", "payload", "payload_base64"});
  if (!options.ok()) return options.status();
  absl::StatusOr<std::string> topic = StringField(call.body, "topic", "");
  if (!topic.ok()) return topic.status();
  absl::StatusOr<std::string> payload = PayloadFromJson(call.body, true);
  if (!payload.ok()) return payload.status();
  absl::StatusOr<std::string> id =
      scheduler.OpenBatch(*topic, *payload, *options);
  if (!id.ok()) return id.status();
  return BatchReply(scheduler, *id, 201);
}

}  // namespace

void AddBatchRoutes(Router& router, const RouteContext& context) {
  Scheduler& scheduler = *context.scheduler;
  router.Post("/v1/batches",
              [&scheduler](const Call& call) { return Open(scheduler, call); });
  router.PostAction(std::string(kBatch) + "/close",
                    [&scheduler](const Call& call) -> absl::StatusOr<Reply> {
                      if (absl::Status s = scheduler.CloseBatch(call.path[0]);
                          !s.ok()) {
                        return s;
                      }
                      return BatchReply(scheduler, call.path[0]);
                    });
  router.Get(kBatch, [&scheduler](const Call& call) {
    return BatchReply(scheduler, call.path[0]);
  });
}

}  // namespace serve
}  // namespace delayq
