// Copyright delayq authors.

#include "backends/memory/count_book.h"

#include <algorithm>
#include <cstdint>
#include <tuple>

#include "src/common/transition_counts.h"

namespace delayq {
namespace memory_internal {

CountBook::CountBook(const CountsOptions& options) : options_(options) {}

int64_t CountBook::OldestKept(int64_t now_us) const {
  return internal::MinuteMicrosOf(now_us) -
         absl::ToInt64Microseconds(options_.window) +
         absl::ToInt64Microseconds(absl::Minutes(1));
}

void CountBook::Count(absl::string_view topic, int64_t now_us,
                      const JobCounts& delta) {
  if (!options_.enabled) return;
  latest_us_ = std::max(latest_us_, now_us);
  TopicCounts& counts = topics_[topic];
  counts.totals += delta;
  const int64_t minute = internal::MinuteMicrosOf(now_us);
  auto& minutes = counts.minutes;
  if (minutes.empty() || minutes.back().first < minute) {
    const int64_t oldest = OldestKept(now_us);
    while (!minutes.empty() && minutes.front().first < oldest) {
      minutes.pop_front();
    }
    minutes.emplace_back(minute, JobCounts());
  }
  // A call with a `now` behind the newest minute (another thread's clock
  // read earlier) counts in its own minute when that is still kept.
  auto it =
      std::lower_bound(minutes.begin(), minutes.end(), minute,
                       [](const auto& m, int64_t at) { return m.first < at; });
  if (it == minutes.end()) return;
  if (it->first != minute) it = minutes.emplace(it, minute, JobCounts());
  it->second += delta;
}

std::vector<TopicMinute> CountBook::Minutes(absl::Time from,
                                            absl::Time to) const {
  const int64_t first =
      std::max(internal::MinuteMicrosOf(absl::ToUnixMicros(from)),
               OldestKept(latest_us_));
  const int64_t last = absl::ToUnixMicros(to);
  std::vector<TopicMinute> out;
  for (const auto& [topic, counts] : topics_) {
    for (const auto& [minute, c] : counts.minutes) {
      if (minute < first || minute > last || c.empty()) continue;
      out.push_back({topic, absl::FromUnixMicros(minute), c});
    }
  }
  std::sort(out.begin(), out.end(),
            [](const TopicMinute& a, const TopicMinute& b) {
              return std::tie(a.minute, a.topic) < std::tie(b.minute, b.topic);
            });
  return out;
}

std::vector<TopicTotals> CountBook::Totals() const {
  std::vector<TopicTotals> out;
  out.reserve(topics_.size());
  for (const auto& [topic, counts] : topics_) {
    out.push_back({topic, counts.totals});
  }
  std::sort(out.begin(), out.end(),
            [](const TopicTotals& a, const TopicTotals& b) {
              return a.topic < b.topic;
            });
  return out;
}

}  // namespace memory_internal
}  // namespace delayq
