// Copyright delayq authors.
//
// CountBook — the memory store's counts (see delayq/counts.h): per topic,
// its totals and its minutes, oldest first, no older than the window. A
// call counts into the topic's newest minute, found in one hash probe, so
// counting costs a job almost nothing; minutes that left the window go as
// the topic counts again, and are skipped by reads until then.
//
// Not thread-safe: the store's mutex guards it.

#ifndef DELAYQ_BACKENDS_MEMORY_COUNT_BOOK_H_
#define DELAYQ_BACKENDS_MEMORY_COUNT_BOOK_H_

#include <cstdint>
#include <deque>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "delayq/counts.h"

namespace delayq {
namespace memory_internal {

class CountBook {
 public:
  explicit CountBook(const CountsOptions& options);

  // Adds `delta` to `topic`'s counts in the minute that holds `now_us`.
  void Count(absl::string_view topic, int64_t now_us, const JobCounts& delta);

  // As Backend::Counts(). The window ends at the latest time counted (the
  // store reads no clock).
  std::vector<TopicMinute> Minutes(absl::Time from, absl::Time to) const;
  // As Backend::CountTotals().
  std::vector<TopicTotals> Totals() const;

 private:
  struct TopicCounts {
    JobCounts totals;
    std::deque<std::pair<int64_t, JobCounts>> minutes;  // (minute µs, counts)
  };
  // The oldest minute the window keeps at `now_us`.
  int64_t OldestKept(int64_t now_us) const;

  const CountsOptions options_;
  absl::flat_hash_map<std::string, TopicCounts> topics_;
  int64_t latest_us_ = 0;  // the latest time counted
};

}  // namespace memory_internal
}  // namespace delayq

#endif  // DELAYQ_BACKENDS_MEMORY_COUNT_BOOK_H_
