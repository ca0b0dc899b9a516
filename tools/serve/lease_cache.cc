// Copyright delayq authors.

#include "tools/serve/lease_cache.h"

#include <utility>

namespace delayq {
namespace serve {

void LeaseCache::Put(const Lease& lease) {
  Entry entry;
  entry.lease.job.id = lease.job.id;
  entry.lease.job.topic = lease.job.topic;
  entry.lease.job.state = lease.job.state;
  entry.lease.job.priority = lease.job.priority;
  entry.lease.job.attempts = lease.job.attempts;
  entry.lease.job.max_attempts = lease.job.max_attempts;
  entry.lease.job.ttr = lease.job.ttr;
  entry.lease.job.backoff = lease.job.backoff;
  entry.lease.job.enqueued_at = lease.job.enqueued_at;
  entry.lease.job.run_at = lease.job.run_at;
  entry.lease.job.deadline = lease.job.deadline;
  entry.lease.token = lease.token;
  entry.lease.deadline = lease.deadline;
  absl::MutexLock lock(&mu_);
  MakeRoom();
  entry.put = ++puts_;
  order_.push_back(PutRecord{lease.job.id, entry.put});
  leases_.insert_or_assign(lease.job.id, std::move(entry));
}

std::optional<Lease> LeaseCache::Find(absl::string_view id,
                                      uint64_t token) const {
  absl::MutexLock lock(&mu_);
  auto it = leases_.find(id);
  if (it == leases_.end() || it->second.lease.token != token) {
    return std::nullopt;
  }
  return it->second.lease;
}

std::optional<Lease> LeaseCache::Take(absl::string_view id, uint64_t token) {
  absl::MutexLock lock(&mu_);
  auto it = leases_.find(id);
  if (it == leases_.end() || it->second.lease.token != token) {
    return std::nullopt;
  }
  Lease lease = std::move(it->second.lease);
  leases_.erase(it);
  return lease;
}

size_t LeaseCache::size() const {
  absl::MutexLock lock(&mu_);
  return leases_.size();
}

bool LeaseCache::Current(const PutRecord& put) const {
  auto it = leases_.find(put.id);
  return it != leases_.end() && it->second.put == put.put;
}

void LeaseCache::MakeRoom() {
  while (!order_.empty() &&
         (leases_.size() >= capacity_ || !Current(order_.front()))) {
    if (Current(order_.front())) leases_.erase(order_.front().id);
    order_.pop_front();
  }
  // Records of leases since taken pile up behind a long-lived one; rewrite
  // the list when they are most of it, so it stays within twice the cache.
  if (order_.size() > 2 * capacity_) {
    std::deque<PutRecord> current;
    for (PutRecord& put : order_) {
      if (Current(put)) current.push_back(std::move(put));
    }
    order_.swap(current);
  }
}

}  // namespace serve
}  // namespace delayq
