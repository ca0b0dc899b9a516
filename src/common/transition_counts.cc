// Copyright delayq authors.

#include "src/common/transition_counts.h"

#include <cstdint>
#include <string>
#include <utility>

#include "absl/container/btree_map.h"
#include "absl/strings/str_cat.h"

namespace delayq {
namespace internal {

JobCounts CountOfMove(Transition::Kind kind) {
  JobCounts c;
  switch (kind) {
    case Transition::Kind::kPromoted:
      break;
    case Transition::Kind::kExpired:
      c.expired = 1;
      break;
    case Transition::Kind::kDead:
      c.expired = 1;
      c.dead = 1;
      break;
    case Transition::Kind::kLapsed:
      c.lapsed = 1;
      c.dead = 1;
      break;
    case Transition::Kind::kDiscarded:
      c.lapsed = 1;
      break;
  }
  return c;
}

JobCounts CountOfFail(FailOutcome outcome) {
  JobCounts c;
  c.failed = 1;
  if (outcome == FailOutcome::kRetry) {
    c.retried = 1;
  } else {
    c.dead = 1;
  }
  return c;
}

JobCounts CountOfDependencyDeath() {
  JobCounts c;
  c.dead = 1;
  return c;
}

JobCounts CountOfDelivery(int64_t run_at_us, int64_t now_us) {
  JobCounts c;
  c.lateness[LatenessBucket(now_us - run_at_us)] = 1;
  return c;
}

std::vector<TopicMinute> SumMinutes(
    const std::vector<std::vector<TopicMinute>>& parts) {
  absl::btree_map<std::pair<absl::Time, std::string>, JobCounts> sum;
  for (const auto& part : parts) {
    for (const TopicMinute& m : part) sum[{m.minute, m.topic}] += m.counts;
  }
  std::vector<TopicMinute> out;
  out.reserve(sum.size());
  for (const auto& [key, counts] : sum) {
    out.push_back({key.second, key.first, counts});
  }
  return out;
}

std::vector<TopicTotals> SumTotals(
    const std::vector<std::vector<TopicTotals>>& parts) {
  absl::btree_map<std::string, JobCounts> sum;
  for (const auto& part : parts) {
    for (const TopicTotals& t : part) sum[t.topic] += t.counts;
  }
  std::vector<TopicTotals> out;
  out.reserve(sum.size());
  for (const auto& [topic, counts] : sum) out.push_back({topic, counts});
  return out;
}

std::vector<TopicTotals> SumByTopic(const std::vector<TopicMinute>& minutes) {
  absl::btree_map<std::string, JobCounts> sum;
  for (const TopicMinute& m : minutes) sum[m.topic] += m.counts;
  std::vector<TopicTotals> out;
  out.reserve(sum.size());
  for (const auto& [topic, counts] : sum) out.push_back({topic, counts});
  return out;
}

absl::Status CheckCountsOptions(absl::string_view who,
                                const CountsOptions& options) {
  if (options.window >= absl::Minutes(1)) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      who, ": counts window ", absl::FormatDuration(options.window),
      " is shorter than a minute"));
}

int64_t MinuteMicrosOf(int64_t now_us) {
  // Stores count no time before the epoch; an infinite past (a read "from
  // the beginning") becomes the epoch rather than an overflow.
  if (now_us <= 0) return 0;
  return now_us - now_us % 60'000'000;
}

}  // namespace internal
}  // namespace delayq
