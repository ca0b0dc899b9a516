// Copyright delayq authors.
//
// The workers view: every live lease, with who holds it and since when.

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "tools/common/values.h"
#include "tools/serve/api/json_codec.h"
#include "tools/serve/api/routes.h"

namespace delayq {
namespace serve {
namespace {

constexpr int kMaxLeases = 1'000;

// The cursor of a page of leases: the topic the next page starts in, as
// URL-safe base64, '.', and that topic's list cursor (which holds no '.').
// Topics are listed in order, so a topic that sorts before the cursor's
// was done with; the topic itself need not still have leases. A forged
// topic only moves where the page starts: the list cursor is used for the
// topic it names, and the store checks it.
std::string LeaseCursor(absl::string_view topic, absl::string_view cursor) {
  std::string out;
  absl::WebSafeBase64Escape(topic, &out);
  return absl::StrCat(out, ".", cursor);
}

absl::Status ParseLeaseCursor(absl::string_view text, std::string* topic,
                              std::string* cursor) {
  const size_t dot = text.find('.');
  if (dot == absl::string_view::npos ||
      !absl::WebSafeBase64Unescape(text.substr(0, dot), topic)) {
    return absl::InvalidArgumentError(
        "bad cursor: not a cursor that GET /v1/workers gave");
  }
  *cursor = std::string(text.substr(dot + 1));
  return absl::OkStatus();
}

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
  std::string from_topic, cursor;
  if (!call.Query("cursor").empty()) {
    absl::Status s =
        ParseLeaseCursor(call.Query("cursor"), &from_topic, &cursor);
    if (!s.ok()) return s;
  }
  absl::StatusOr<std::vector<std::string>> topics = scheduler.Topics();
  if (!topics.ok()) return topics.status();
  std::vector<Job> leases;
  std::string next;
  auto topic = std::lower_bound(topics->begin(), topics->end(), from_topic);
  // The cursor's own list goes on from its place; the next ones start.
  if (topic == topics->end() || *topic != from_topic) cursor.clear();
  for (; topic != topics->end(); ++topic) {
    if (static_cast<int>(leases.size()) == limit) {
      next = LeaseCursor(*topic, "");
      break;
    }
    absl::StatusOr<JobPage> page =
        scheduler.ListPage(*topic, JobState::kReserved,
                           limit - static_cast<int>(leases.size()), cursor);
    if (!page.ok()) return page.status();
    cursor.clear();
    for (Job& job : page->jobs) leases.push_back(std::move(job));
    if (!page->next_cursor.empty()) {
      next = LeaseCursor(*topic, page->next_cursor);
      break;
    }
  }
  std::string text = JsonListText<Job>("leases", leases, &AppendLeaseJson);
  text.pop_back();
  text += ",\"next_cursor\":";
  AppendJsonString(next, &text);
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
