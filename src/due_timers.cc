// Copyright delayq authors.

#include "src/due_timers.h"

#include <utility>

namespace delayq {
namespace internal {

DueTimers::DueTimers(absl::Time origin, absl::Duration tick,
                     size_t max_job_timers)
    : max_job_timers_(max_job_timers), ticks_(origin, tick), wheel_(0) {}

void DueTimers::Arm(absl::string_view id, absl::Time at) {
  if (by_id_.size() >= max_job_timers_ && !by_id_.contains(id)) {
    ArmNews(at);
    return;
  }
  const uint64_t serial = next_serial_++;
  const TimerId timer =
      wheel_.Insert(ticks_.CeilTicks(at), Entry{std::string(id), serial});
  auto [it, inserted] = by_id_.try_emplace(id, Armed{timer, serial});
  if (!inserted) {
    wheel_.Cancel(it->second.timer);
    it->second = Armed{timer, serial};
  }
}

void DueTimers::Disarm(absl::string_view id) {
  auto it = by_id_.find(id);
  if (it == by_id_.end()) return;
  wheel_.Cancel(it->second.timer);
  by_id_.erase(it);
}

void DueTimers::ArmPoll(absl::Time at) {
  wheel_.Cancel(poll_);
  poll_ = at == absl::InfiniteFuture()
              ? TimerId()
              : wheel_.Insert(ticks_.CeilTicks(at), Entry{"", kPollSerial});
}

void DueTimers::ArmNews(absl::Time at) {
  if (at >= news_at_ || at == absl::InfiniteFuture()) return;
  wheel_.Cancel(news_);
  news_ = wheel_.Insert(ticks_.CeilTicks(at), Entry{"", kNewsSerial});
  news_at_ = at;
}

DueTimers::Fired DueTimers::Advance(absl::Time now) {
  Fired fired;
  fired.timers = wheel_.Advance(ticks_.FloorTicks(now), [&](Entry&& entry) {
    if (entry.id.empty()) {
      if (entry.serial == kNewsSerial) {
        news_ = TimerId();
        news_at_ = absl::InfiniteFuture();
      } else {
        poll_ = TimerId();
      }
      fired.poll = true;
      return;
    }
    auto it = by_id_.find(entry.id);
    if (it != by_id_.end() && it->second.serial == entry.serial) {
      by_id_.erase(it);
    }
  });
  return fired;
}

absl::Time DueTimers::NextWake() const {
  std::optional<uint64_t> next = wheel_.NextExpiration();
  return next ? ticks_.TimeOf(*next) : absl::InfiniteFuture();
}

}  // namespace internal
}  // namespace delayq
