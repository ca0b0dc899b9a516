// Copyright delayq authors.
//
// event.h — what a Scheduler reports to its listeners.
//
// A listener sees the transitions this scheduler made or observed: jobs it
// enqueued, promoted, reserved, acknowledged, failed, cancelled, the
// expired or dead reservations its promotion found, and the jobs that
// waited for those (JobOptions::after, batches) which the store settled in
// the same step, after that step's own events. Transitions made by other
// processes on a shared store are reported there, not here.
//
//   scheduler->AddListener([](const delayq::Event& e) {
//     if (e.type == delayq::EventType::kDead) Alert(e.id, e.error);
//   });

#ifndef DELAYQ_EVENT_H_
#define DELAYQ_EVENT_H_

#include <functional>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"

namespace delayq {

// EventType
enum class EventType {
  kEnqueued,   // stored (delayed or ready)
  kPromoted,   // delayed -> ready by promotion
  kReserved,   // leased to a worker
  kSucceeded,  // acknowledged and deleted
  kFailed,     // a reservation ended with an error (kRetried or kDead follows)
  kRetried,    // a failed job is scheduled to run again after its backoff
  kDead,       // attempts used up (by failures or by lease expiry), or lapsed
  kExpired,    // a lease deadline passed; the job is ready again
  kCancelled,  // deleted by Cancel()
  kLapsed,     // not reserved by its expire_at: dead with error "expired"
               // (kDead follows), or deleted when it asked to be discarded
               // (nothing follows)
  kKicked,     // dead -> ready by Kick() or KickJob(), attempts reset
  kUnblocked,  // waiting -> ready, or delayed when its run_at is to come:
               // the last job it waited for was acknowledged (or, under
               // DependencyFailure::kRun, died or left); a batch's
               // completion job, when its batch finished. A waiting job
               // that a dependency's failure sends dead or deletes has
               // kDead (its error naming the dependency) or kCancelled.
};

// EventTypeName()
//
// "enqueued", "promoted", ... as spelled above without the k.
absl::string_view EventTypeName(EventType type);

// Event
struct Event {
  EventType type;
  std::string id;
  std::string topic;
  // The clock's time when the scheduler made or saw the transition.
  absl::Time at;
  // The job's attempts after the transition, where the scheduler knows them
  // (0 otherwise).
  int attempts = 0;
  // kFailed, kDead, kLapsed: the error kept with the job.
  std::string error;
  // kReserved: when the job came due (its run_at), so that `at - due` is
  // how late it was delivered. InfinitePast() for other events.
  absl::Time due = absl::InfinitePast();
  // kSucceeded, kFailed: when the lease they end was made
  // (Lease::reserved_at), so that `at - reserved_at` is how long its handler
  // ran. InfinitePast() for other events and when not known.
  absl::Time reserved_at = absl::InfinitePast();
};

// EventListener
//
// Called synchronously on the thread that made the transition, after the
// store committed it and with no scheduler lock held. It must be quick and
// thread-safe; it may call the scheduler, including AddListener() and
// RemoveListener() (even for itself). An exception it throws is caught and
// ignored: the transition it reports has already happened.
using EventListener = std::function<void(const Event&)>;

// EventBatchListener
//
// An EventListener told the events of one call together, in order: a batch
// add, reserve or ack tells of all its jobs at once, other calls of one or
// a few. For a listener that takes a lock, one lock per call instead of
// one per job. The same rules hold; an exception it throws loses the rest
// of that call's events for it.
using EventBatchListener = std::function<void(absl::Span<const Event>)>;

}  // namespace delayq

#endif  // DELAYQ_EVENT_H_
