// Copyright delayq authors.

#include "backends/redis/internal/reserve_hints.h"

#include <algorithm>

namespace delayq {
namespace redis_internal {

ReserveHints::ReserveHints(int shards)
    : shards_(shards),
      horizon_(shards, absl::InfinitePast()),
      horizon_epoch_(shards, 0),
      resyncs_(shards, 0) {}

void ReserveHints::ResetLocked() {
  topics_.clear();
  for (int k = 0; k < shards_; ++k) {
    horizon_[k] = absl::InfinitePast();
    ++horizon_epoch_[k];
    ++resyncs_[k];
  }
}

void ReserveHints::Activate() {
  internal::MutexLock lock(&mu_);
  if (active_++ == 0) ResetLocked();
}

void ReserveHints::Deactivate() {
  internal::MutexLock lock(&mu_);
  if (--active_ == 0) ResetLocked();
}

ReserveHints::Topic& ReserveHints::TopicLocked(absl::string_view topic) {
  auto it = topics_.find(topic);
  if (it == topics_.end()) {
    Topic t;
    t.flagged.assign(shards_, true);
    t.epoch.assign(shards_, 0);
    it = topics_.emplace(std::string(topic), std::move(t)).first;
  }
  return it->second;
}

ReserveHints::Plan ReserveHints::Begin(absl::string_view topic,
                                       absl::Time now) {
  internal::MutexLock lock(&mu_);
  Topic& t = TopicLocked(topic);
  Plan plan;
  plan.epochs.resize(shards_);
  for (int i = 0; i < shards_; ++i) {
    const int k = (t.next + i) % shards_;
    plan.epochs[k] = t.epoch[k] + resyncs_[k];
    if (active_ == 0 || t.flagged[k] || now >= horizon_[k]) {
      plan.order.push_back(k);
    }
  }
  return plan;
}

void ReserveHints::Served(absl::string_view topic, int shard) {
  internal::MutexLock lock(&mu_);
  TopicLocked(topic).next = (shard + 1) % shards_;
}

void ReserveHints::Drained(absl::string_view topic, int shard, uint64_t epoch) {
  internal::MutexLock lock(&mu_);
  if (active_ == 0) return;
  Topic& t = TopicLocked(topic);
  if (t.epoch[shard] + resyncs_[shard] == epoch) t.flagged[shard] = false;
}

void ReserveHints::Ready(int shard, absl::string_view topic) {
  internal::MutexLock lock(&mu_);
  Topic& t = TopicLocked(topic);
  t.flagged[shard] = true;
  ++t.epoch[shard];
}

void ReserveHints::ReadyEverywhere(absl::string_view topic) {
  internal::MutexLock lock(&mu_);
  Topic& t = TopicLocked(topic);
  for (int k = 0; k < shards_; ++k) {
    t.flagged[k] = true;
    ++t.epoch[k];
  }
}

void ReserveHints::Due(int shard, absl::Time at) {
  internal::MutexLock lock(&mu_);
  horizon_[shard] = std::min(horizon_[shard], at);
  ++horizon_epoch_[shard];
}

void ReserveHints::Resync(int shard) {
  internal::MutexLock lock(&mu_);
  for (auto& [name, t] : topics_) t.flagged[shard] = true;
  horizon_[shard] = absl::InfinitePast();
  ++horizon_epoch_[shard];
  ++resyncs_[shard];
}

uint64_t ReserveHints::HorizonEpoch(int shard) const {
  internal::MutexLock lock(&mu_);
  return horizon_epoch_[shard];
}

void ReserveHints::Horizon(int shard, absl::Time next_due, uint64_t epoch) {
  internal::MutexLock lock(&mu_);
  if (active_ == 0) return;
  if (horizon_epoch_[shard] == epoch) {
    horizon_[shard] = next_due;
  } else {
    horizon_[shard] = std::min(horizon_[shard], next_due);
  }
}

bool ReserveHints::MayBeDue(int shard, absl::Time now) const {
  internal::MutexLock lock(&mu_);
  return active_ == 0 || now >= horizon_[shard];
}

}  // namespace redis_internal
}  // namespace delayq
