// Copyright delayq authors.
//
// Adding, reading, listing, cancelling and retrying jobs.

#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "tools/common/values.h"
#include "tools/serve/api/json_codec.h"
#include "tools/serve/api/request_bodies.h"
#include "tools/serve/api/routes.h"

namespace delayq {
namespace serve {
namespace {

constexpr char kTopic[] = "/v1/topics/([^/]+)";
constexpr char kJob[] = "/v1/jobs/([^/]+)";
constexpr int kMaxList = 10'000;
// The longest GET /v1/jobs/{id}?wait= may hold a connection.
constexpr absl::Duration kMaxWait = absl::Seconds(60);

absl::StatusOr<Reply> AddOne(Scheduler& scheduler, const Call& call) {
  absl::StatusOr<JobOptions> options =
      JobOptionsFromJson(call.body, {"payload", "payload_base64"});
  if (!options.ok()) return options.status();
  absl::StatusOr<std::string> payload = PayloadFromJson(call.body);
  if (!payload.ok()) return payload.status();
  absl::StatusOr<std::string> id =
      scheduler.Enqueue(call.path[0], *payload, *options);
  if (!id.ok()) return id.status();
  return Reply{201, Json{{"id", *id}}};
}

// The batch's payloads: "payloads" (strings) or "payloads_base64".
absl::StatusOr<std::vector<std::string>> BatchPayloads(const Json& body) {
  const bool text = body.contains("payloads");
  if (text == body.contains("payloads_base64")) {
    return absl::InvalidArgumentError(
        "give the payloads as exactly one of 'payloads' (text) and "
        "'payloads_base64'");
  }
  const char* name = text ? "payloads" : "payloads_base64";
  const Json& list = body[name];
  if (!list.is_array() || list.empty() || list.size() > kMaxBatch) {
    return absl::InvalidArgumentError(absl::StrCat(
        "field '", name, "' must be a list of 1 to ", kMaxBatch, " strings"));
  }
  std::vector<std::string> payloads;
  payloads.reserve(list.size());
  for (const Json& item : list) {
    if (!item.is_string()) {
      return absl::InvalidArgumentError(
          absl::StrCat("field '", name, "' must hold strings only"));
    }
    std::string payload = item.get<std::string>();
    if (!text && !absl::Base64Unescape(item.get<std::string>(), &payload)) {
      return absl::InvalidArgumentError(
          "field 'payloads_base64' holds bad base64");
    }
    payloads.push_back(std::move(payload));
  }
  return payloads;
}

absl::StatusOr<Reply> AddBatch(Scheduler& scheduler, const Call& call) {
  absl::StatusOr<JobOptions> options =
      JobOptionsFromJson(call.body, {"payloads", "payloads_base64"});
  if (!options.ok()) return options.status();
  absl::StatusOr<std::vector<std::string>> payloads = BatchPayloads(call.body);
  if (!payloads.ok()) return payloads.status();
  absl::StatusOr<std::vector<std::string>> ids =
      scheduler.EnqueueBatch(call.path[0], *payloads, *options);
  if (!ids.ok()) return ids.status();
  // The ids are UTF-8: generated, or made from the body's "id" string.
  return Reply::Text(201,
                     JsonListText<std::string>("ids", *ids, &AppendJsonString));
}

// POST /v1/flows: {"jobs": [{"topic", "payload", and the options of one
// job, "id" and "after" among them}, ...]}, enqueued at once
// (Scheduler::EnqueueFlow()); 201 with the ids in the order given.
absl::StatusOr<Reply> AddFlow(Scheduler& scheduler, const Call& call) {
  absl::StatusOr<std::vector<Scheduler::FlowJob>> flow =
      FlowFromJson(call.body);
  if (!flow.ok()) return flow.status();
  absl::StatusOr<std::vector<std::string>> ids = scheduler.EnqueueFlow(*flow);
  if (!ids.ok()) return ids.status();
  return Reply::Text(201,
                     JsonListText<std::string>("ids", *ids, &AppendJsonString));
}

absl::StatusOr<Reply> ListJobs(Scheduler& scheduler, const Call& call) {
  JobState state = JobState::kReady;
  const std::string state_name = call.Query("state");
  if (!state_name.empty() && !ParseJobState(state_name, &state)) {
    return absl::InvalidArgumentError(
        absl::StrCat("state must be ", cli::kJobStatesText));
  }
  int limit = 100;
  const std::string limit_text = call.Query("limit");
  if (!limit_text.empty() && (!absl::SimpleAtoi(limit_text, &limit) ||
                              limit < 1 || limit > kMaxList)) {
    return absl::InvalidArgumentError(
        absl::StrCat("limit must be a whole number from 1 to ", kMaxList));
  }
  // The cursor comes from outside: the store decodes and checks it, and
  // refuses one it did not give with InvalidArgument (a 400).
  absl::StatusOr<JobPage> page =
      scheduler.ListPage(call.path[0], state, limit, call.Query("cursor"));
  if (!page.ok()) return page.status();
  std::string text = JsonListText<Job>("jobs", page->jobs, &AppendJobJson);
  // {"jobs":[...]} gains the cursor of the next page ("" at the end).
  text.pop_back();
  text += ",\"next_cursor\":";
  AppendJsonString(page->next_cursor, &text);
  text += "}";
  return Reply::Text(200, std::move(text));
}

// GET /v1/jobs/{id}: the job; with ?wait=DURATION (at most kMaxWait), once
// it has finished or when the wait is over, whichever comes first (then as
// it is: the client looks at its state).
absl::StatusOr<Reply> GetJob(Scheduler& scheduler, const Call& call) {
  const std::string wait_text = call.Query("wait");
  absl::StatusOr<Job> job;
  if (wait_text.empty()) {
    job = scheduler.Get(call.path[0]);
  } else {
    absl::StatusOr<absl::Duration> wait =
        cli::ParseDurationValue("wait", wait_text);
    if (!wait.ok()) return wait.status();
    if (*wait > kMaxWait) {
      return absl::InvalidArgumentError(absl::StrCat(
          "wait must be at most ", absl::FormatDuration(kMaxWait)));
    }
    job = scheduler.WaitForResult(call.path[0], *wait);
    if (absl::IsDeadlineExceeded(job.status())) {
      job = scheduler.Get(call.path[0]);
    }
  }
  if (!job.ok()) return job.status();
  std::string text;
  AppendJobJson(*job, &text);
  return Reply::Text(200, std::move(text));
}

// POST /v1/bulk/{cancel,retry,promote}: `act` on each id of the body, one
// after the other (every id is read before any is acted on, so a malformed
// request changes nothing). 200 with how many were done and why each other
// one was not, in the order of the request.
Route BulkRoute(Scheduler& scheduler,
                absl::Status (Scheduler::*act)(absl::string_view)) {
  return [&scheduler, act](const Call& call) -> absl::StatusOr<Reply> {
    absl::StatusOr<std::vector<std::string>> ids = BulkIdsFromJson(call.body);
    if (!ids.ok()) return ids.status();
    std::vector<absl::Status> outcomes;
    outcomes.reserve(ids->size());
    for (const std::string& id : *ids) {
      outcomes.push_back((scheduler.*act)(id));
    }
    return Reply{200, OutcomesJson("done", *ids, outcomes)};
  };
}

// A route that does `act` to the job its path names: an empty 200, or the
// call's error.
Route JobRoute(Scheduler& scheduler,
               absl::Status (Scheduler::*act)(absl::string_view)) {
  return [&scheduler, act](const Call& call) -> absl::StatusOr<Reply> {
    if (absl::Status s = (scheduler.*act)(call.path[0]); !s.ok()) return s;
    return Reply{};
  };
}

}  // namespace

void AddJobRoutes(Router& router, const RouteContext& context) {
  Scheduler& scheduler = *context.scheduler;
  router.Post(absl::StrCat(kTopic, "/jobs"), [&scheduler](const Call& call) {
    return AddOne(scheduler, call);
  });
  router.Post(
      absl::StrCat(kTopic, "/jobs/batch"),
      [&scheduler](const Call& call) { return AddBatch(scheduler, call); });
  router.Post("/v1/flows", [&scheduler](const Call& call) {
    return AddFlow(scheduler, call);
  });
  router.Get(
      absl::StrCat(kTopic, "/jobs"),
      [&scheduler](const Call& call) { return ListJobs(scheduler, call); },
      {"state", "limit", "cursor"});
  router.PostAction(absl::StrCat(kJob, "/retry"),
                    JobRoute(scheduler, &Scheduler::KickJob));
  router.PostAction(absl::StrCat(kJob, "/promote"),
                    JobRoute(scheduler, &Scheduler::Promote));
  // The job and what it waits for that is still to run
  // (Scheduler::CancelFlow()): {"cancelled": [ids]}.
  router.PostAction(absl::StrCat(kJob, "/cancel-flow"),
                    [&scheduler](const Call& call) -> absl::StatusOr<Reply> {
                      absl::StatusOr<std::vector<std::string>> cancelled =
                          scheduler.CancelFlow(call.path[0]);
                      if (!cancelled.ok()) return cancelled.status();
                      return Reply{200, Json{{"cancelled", *cancelled}}};
                    });
  router.Get(kJob,
             [&scheduler](const Call& call) { return GetJob(scheduler, call); },
             {"wait"});
  router.Post("/v1/bulk/cancel", BulkRoute(scheduler, &Scheduler::Cancel));
  router.Post("/v1/bulk/retry", BulkRoute(scheduler, &Scheduler::KickJob));
  router.Post("/v1/bulk/promote", BulkRoute(scheduler, &Scheduler::Promote));
  router.Delete(kJob, JobRoute(scheduler, &Scheduler::Cancel));
}

}  // namespace serve
}  // namespace delayq
