// Copyright delayq authors.
//
// The workers view: every live lease, with who holds it and since when.

#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "tools/common/values.h"
#include "tools/serve/api/json_codec.h"
#include "tools/serve/api/routes.h"

namespace delayq {
namespace serve {
namespace {

constexpr int kMaxLeases = 1'000;

void AppendLeaseJson(const Job& job, std::string* out) {
  const Json lease = {
      {"holder", job.holder},
      {"topic", job.topic},
      {"id", job.id},
      {"reserved_at", job.reserved_at == absl::InfinitePast()
                          ? Json(nullptr)
                          : Json(cli::UtcText(job.reserved_at))},
      {"deadline", cli::UtcText(job.deadline)},
      {"attempts", job.attempts},
      {"max_attempts", job.max_attempts}};
  // Ids and topics are UTF-8 (the scheduler checks them); a holder is
  // whatever a process was named: replaced where it is not UTF-8.
  out->append(lease.dump(-1, ' ', false, Json::error_handler_t::replace));
}

// GET /v1/workers?limit=N&cursor=C: live leases, topic by topic (in
// topic order, each by deadline), N at most (kMaxLeases), with the
// cursor of the next page.
absl::StatusOr<Reply> ListLeases(Scheduler& scheduler, const Call& call) {
  int limit = 100;
  const std::string limit_text = call.Query("limit");
  if (!limit_text.empty() && (!absl::SimpleAtoi(limit_text, &limit) ||
                              limit < 1 || limit > kMaxLeases)) {
    return absl::InvalidArgumentError(
        absl::StrCat("limit must be a whole number from 1 to ", kMaxLeases));
  }
  absl::StatusOr<JobPage> page =
      scheduler.ListLeases(limit, call.Query("cursor"));
  if (!page.ok()) return page.status();
  std::string text = JsonListText<Job>("leases", page->jobs, &AppendLeaseJson);
  text.pop_back();
  text += ",\"next_cursor\":";
  AppendJsonString(page->next_cursor, &text);
  text += "}";
  return Reply::Text(200, std::move(text));
}

}  // namespace

void AddWorkerRoutes(Router& router, const RouteContext& context) {
  Scheduler& scheduler = *context.scheduler;
  router.Get(
      "/v1/workers",
      [&scheduler](const Call& call) { return ListLeases(scheduler, call); },
      {"limit", "cursor"});
}

}  // namespace serve
}  // namespace delayq
