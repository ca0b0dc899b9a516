// Copyright delayq authors.

#include "tools/serve/api/lease_cache.h"

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
  // An older lease of the same job is replaced (the job was reserved again).
  if (auto it = index_.find(lease.job.id); it != index_.end()) {
    Free(it->second);
  }
  MakeRoom();
  size_t slot;
  if (!free_.empty()) {
    slot = free_.back();
    free_.pop_back();
  } else {
    slot = slots_.size();
    slots_.emplace_back();
  }
  Slot& into = slots_[slot];
  into.lease = std::move(lease);
  into.put = ++puts_;
  index_.emplace(into.lease.job.id, slot);
  order_.push_back(PutRecord{slot, into.put});
}

std::optional<Lease> LeaseCache::Find(absl::string_view id,
                                      uint64_t token) const {
  absl::MutexLock lock(&mu_);
  std::optional<size_t> slot = SlotOf(id, token);
  if (!slot.has_value()) return std::nullopt;
  return slots_[*slot].lease;
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
  std::optional<size_t> slot = SlotOf(id, token);
  if (!slot.has_value()) return std::nullopt;
  return Free(*slot);
}

std::optional<size_t> LeaseCache::SlotOf(absl::string_view id,
                                         uint64_t token) const {
  auto it = index_.find(id);
  if (it == index_.end() || slots_[it->second].lease.token != token) {
    return std::nullopt;
  }
  return it->second;
}

Lease LeaseCache::Free(size_t slot) {
  Slot& from = slots_[slot];
  index_.erase(absl::string_view(from.lease.job.id));
  from.put = 0;
  free_.push_back(slot);
  return std::move(from.lease);
}

size_t LeaseCache::size() const {
  absl::MutexLock lock(&mu_);
  return index_.size();
}

void LeaseCache::MakeRoom() {
  while (!order_.empty() &&
         (index_.size() >= capacity_ || !Current(order_.front()))) {
    if (Current(order_.front())) Free(order_.front().slot);
    order_.pop_front();
  }
  // Records of leases since taken pile up behind a long-lived one; rewrite
  // the list when they are most of it, so it stays within twice the cache.
  if (order_.size() > 2 * capacity_) {
    std::deque<PutRecord> current;
    for (const PutRecord& put : order_) {
      if (Current(put)) current.push_back(put);
    }
    order_.swap(current);
  }
}

}  // namespace serve
}  // namespace delayq
