// Copyright delayq authors.

#include "tools/serve/lease_cache.h"

#include <utility>

namespace delayq {
namespace serve {

void LeaseCache::Put(Lease lease) {
  absl::MutexLock lock(&mu_);
  PutLocked(std::move(lease));
}

void LeaseCache::PutAll(std::vector<Lease> leases) {
  absl::MutexLock lock(&mu_);
  for (Lease& lease : leases) PutLocked(std::move(lease));
}

void LeaseCache::PutLocked(Lease lease) {
  // Finishing a lease needs neither of these, and they may be large.
  std::string().swap(lease.job.payload);
  std::string().swap(lease.job.last_error);
  const std::string id = lease.job.id;
  Entry entry;
  entry.lease = std::move(lease);
  MakeRoom();
  entry.put = ++puts_;
  order_.push_back(PutRecord{id, entry.put});
  leases_.insert_or_assign(id, std::move(entry));
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
  return TakeLocked(id, token);
}

std::vector<std::optional<Lease>> LeaseCache::TakeAll(
    absl::Span<const LeaseName> names) {
  std::vector<std::optional<Lease>> leases;
  leases.reserve(names.size());
  absl::MutexLock lock(&mu_);
  for (const LeaseName& name : names) {
    leases.push_back(TakeLocked(name.id, name.token));
  }
  return leases;
}

std::optional<Lease> LeaseCache::TakeLocked(absl::string_view id,
                                            uint64_t token) {
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
