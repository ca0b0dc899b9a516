// Copyright delayq authors.
//
// LeaseCache — the leases this server handed out, so that finishing one
// (ack, fail, release, touch) does not first read the job back from the
// store. A request names a job and a token; the cache gives the lease
// reserve returned for exactly that pair, as a library worker would hold
// it. The store still checks the token, so the cache decides nothing: a
// miss (another server's lease, an evicted entry) reads the job instead.
//
// The payload is not kept: finishing a lease does not need it. The cache
// is bounded; when full it forgets the oldest lease.

#ifndef DELAYQ_TOOLS_SERVE_API_LEASE_CACHE_H_
#define DELAYQ_TOOLS_SERVE_API_LEASE_CACHE_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "delayq/job.h"

namespace delayq {
namespace serve {

// A lease as a request names it: its job's id and its token.
struct LeaseName {
  std::string id;
  uint64_t token = 0;
};

class LeaseCache {
 public:
  explicit LeaseCache(size_t capacity) : capacity_(capacity) {}

  // Remembers `lease` (without its payload and last error), replacing an
  // older lease of the same job.
  void Put(Lease lease);
  // Put() for each of a reserve's leases, under one lock.
  void PutAll(std::vector<Lease> leases);

  // The lease of job `id` under `token`, if remembered. Take() also forgets
  // it (the request ends the lease, whatever the store answers).
  std::optional<Lease> Find(absl::string_view id, uint64_t token) const;
  std::optional<Lease> Take(absl::string_view id, uint64_t token);
  // Take() for each name, under one lock; the answers in the names' order.
  std::vector<std::optional<Lease>> TakeAll(absl::Span<const LeaseName> names);

  size_t size() const;

 private:
  // A lease remembered, in a slot that stays where it is: the index views
  // its id in place, so remembering a lease copies no string.
  struct Slot {
    Lease lease;
    uint64_t put = 0;  // when it was put, in Put() calls; 0: free
  };
  struct PutRecord {
    size_t slot = 0;
    uint64_t put = 0;
  };

  // Forgets the oldest leases until one more fits, and drops from `order_`
  // what is no longer remembered (at once from its front; from the rest
  // when that is most of it).
  void MakeRoom() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool Current(const PutRecord& put) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return slots_[put.slot].put == put.put;
  }
  // The slot of job `id`'s lease if it is the one under `token`.
  std::optional<size_t> SlotOf(absl::string_view id, uint64_t token) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Forgets the lease in `slot` (its index entry first: it views the id).
  Lease Free(size_t slot) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void PutLocked(Lease lease) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::optional<Lease> TakeLocked(absl::string_view id, uint64_t token)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const size_t capacity_;
  mutable absl::Mutex mu_;
  std::deque<Slot> slots_ ABSL_GUARDED_BY(mu_);  // grows to capacity_
  std::vector<size_t> free_ ABSL_GUARDED_BY(mu_);
  // id -> slot, for the remembered leases.
  absl::flat_hash_map<absl::string_view, size_t> index_ ABSL_GUARDED_BY(mu_);
  // Every Put() in order, including those since taken or replaced.
  std::deque<PutRecord> order_ ABSL_GUARDED_BY(mu_);
  uint64_t puts_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace serve
}  // namespace delayq

#endif  // DELAYQ_TOOLS_SERVE_API_LEASE_CACHE_H_
