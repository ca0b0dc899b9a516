// Copyright delayq authors.
//
// transition_counts.h — what each transition adds to a topic's counts, as
// Backend::Counts() defines it, for the stores that count in C++ (memory,
// SQLite; the Redis scripts spell the same rules in Lua, and the
// conformance suite holds every store to them).

#ifndef DELAYQ_SRC_COMMON_TRANSITION_COUNTS_H_
#define DELAYQ_SRC_COMMON_TRANSITION_COUNTS_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "delayq/backend.h"
#include "delayq/counts.h"

namespace delayq {
namespace internal {

// A job moved by PromoteDue() or Reserve()'s first step.
JobCounts CountOfMove(Transition::Kind kind);

// A Fail() that sent the job to `outcome`.
JobCounts CountOfFail(FailOutcome outcome);

// A job sent dead by its dependencies (JobOptions::after under kFail: one
// died or was cancelled): a death, with no failed attempt of its own.
JobCounts CountOfDependencyDeath();

// A reservation at `now_us` of a job whose run_at is `run_at_us`.
JobCounts CountOfDelivery(int64_t run_at_us, int64_t now_us);

// The counts of several parts of one store (a sharded one's shards) as
// one: equal (minute, topic) or topic entries summed, in Backend::Counts()
// and Backend::CountTotals() order.
std::vector<TopicMinute> SumMinutes(
    const std::vector<std::vector<TopicMinute>>& parts);
std::vector<TopicTotals> SumTotals(
    const std::vector<std::vector<TopicTotals>>& parts);

// The minutes' counts summed per topic, sorted by topic.
std::vector<TopicTotals> SumByTopic(const std::vector<TopicMinute>& minutes);

// InvalidArgument "<who>: counts window ..." unless `options.window` is at
// least a minute.
absl::Status CheckCountsOptions(absl::string_view who,
                                const CountsOptions& options);

// The minute (µs since the epoch, a multiple of 60 s) that holds `now_us`;
// 0 for a time at or before the epoch.
int64_t MinuteMicrosOf(int64_t now_us);

}  // namespace internal
}  // namespace delayq

#endif  // DELAYQ_SRC_COMMON_TRANSITION_COUNTS_H_
