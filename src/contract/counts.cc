// Copyright delayq authors.

#include "delayq/counts.h"

#include <algorithm>
#include <cstdint>

namespace delayq {

int LatenessBucket(int64_t late_us) {
  const auto* bound = std::lower_bound(kLatenessBoundsMicros.begin(),
                                       kLatenessBoundsMicros.end(), late_us);
  return static_cast<int>(bound - kLatenessBoundsMicros.begin());
}

int64_t JobCounts::delivered() const {
  int64_t sum = 0;
  for (int64_t n : lateness) sum += n;
  return sum;
}

bool JobCounts::empty() const { return *this == JobCounts(); }

JobCounts& JobCounts::operator+=(const JobCounts& other) {
  enqueued += other.enqueued;
  done += other.done;
  failed += other.failed;
  retried += other.retried;
  expired += other.expired;
  dead += other.dead;
  lapsed += other.lapsed;
  for (int i = 0; i < kLatenessBuckets; ++i) lateness[i] += other.lateness[i];
  return *this;
}

bool operator==(const JobCounts& a, const JobCounts& b) {
  return a.enqueued == b.enqueued && a.done == b.done && a.failed == b.failed &&
         a.retried == b.retried && a.expired == b.expired && a.dead == b.dead &&
         a.lapsed == b.lapsed && a.lateness == b.lateness;
}

absl::Time MinuteOf(absl::Time t) {
  return absl::FromUnixSeconds(absl::ToUnixSeconds(t) -
                               ((absl::ToUnixSeconds(t) % 60) + 60) % 60);
}

}  // namespace delayq
