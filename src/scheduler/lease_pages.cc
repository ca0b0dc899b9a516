// Copyright delayq authors.

#include "src/scheduler/lease_pages.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace delayq {
namespace internal {
namespace {

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
        "bad cursor: not a cursor that a list of leases gave");
  }
  *cursor = std::string(text.substr(dot + 1));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<JobPage> LeasePage(Scheduler& scheduler, int limit,
                                  absl::string_view cursor) {
  if (limit < 1) return absl::InvalidArgumentError("limit must be at least 1");
  std::string from_topic, list_cursor;
  if (!cursor.empty()) {
    absl::Status s = ParseLeaseCursor(cursor, &from_topic, &list_cursor);
    if (!s.ok()) return s;
  }
  absl::StatusOr<std::vector<std::string>> topics = scheduler.Topics();
  if (!topics.ok()) return topics.status();
  JobPage out;
  auto topic = std::lower_bound(topics->begin(), topics->end(), from_topic);
  // The cursor's own list goes on from its place; the next ones start.
  if (topic == topics->end() || *topic != from_topic) list_cursor.clear();
  for (; topic != topics->end(); ++topic) {
    const int left = limit - static_cast<int>(out.jobs.size());
    if (left == 0) {
      out.next_cursor = LeaseCursor(*topic, "");
      break;
    }
    absl::StatusOr<JobPage> page =
        scheduler.ListPage(*topic, JobState::kReserved, left, list_cursor);
    if (!page.ok()) return page.status();
    list_cursor.clear();
    for (Job& job : page->jobs) out.jobs.push_back(std::move(job));
    if (!page->next_cursor.empty()) {
      out.next_cursor = LeaseCursor(*topic, page->next_cursor);
      break;
    }
  }
  return out;
}

}  // namespace internal
}  // namespace delayq
