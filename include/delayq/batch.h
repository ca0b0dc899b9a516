// Copyright delayq authors.
//
// batch.h — a group of jobs and the one job that runs once all of them have
// finished.
//
// A batch is opened with its completion job (a topic, a payload, options),
// takes jobs over time (JobOptions::batch, from any number of Enqueue()
// calls and processes), and is then closed. Its completion job waits
// (kWaiting) until the batch is closed and every job of it has finished:
// acknowledged (done), gone dead, or left the store unacknowledged
// (cancelled, purged, discarded at its expiry: counted as cancelled). Then,
// in the same atomic step as that last finish or the close, the completion
// job becomes ready (delayed, if its run_at is still to come), exactly once.
//
// The completion job's id is the batch's id, so its handler reads the
// batch's final counts with GetBatch(job.id): they no longer change once the
// job is released, and the batch stays readable for as long as the job is
// in the store (a kept done job included). The payload stays the producer's
// own bytes.
//
//   std::string batch = *scheduler->OpenBatch("invoices.sent", "march");
//   delayq::JobOptions opts;
//   opts.batch = batch;
//   for (const auto& invoice : invoices) {
//     scheduler->Enqueue("invoices.send", invoice, opts);
//   }
//   scheduler->CloseBatch(batch);
//   // ... the handler of "invoices.sent":
//   delayq::Batch b = *scheduler->GetBatch(job.id);  // b.done, b.dead, ...

#ifndef DELAYQ_BATCH_H_
#define DELAYQ_BATCH_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace delayq {

// Batch
//
// A batch's progress as the store holds it.
struct Batch {
  std::string id;
  // The completion job's id: the batch's own.
  std::string completion_id;
  // Closed: it takes no more jobs.
  bool closed = false;
  // Jobs added to it, and how each of the finished ones finished. A job is
  // counted once, when it first finishes: a dead job kicked back to life
  // afterwards stays counted dead.
  int64_t total = 0;
  int64_t done = 0;
  int64_t dead = 0;
  int64_t cancelled = 0;

  // Jobs that have not finished yet.
  int64_t pending() const { return total - done - dead - cancelled; }
  // Whether the completion job has been released.
  bool complete() const { return closed && pending() == 0; }
};

inline bool operator==(const Batch& a, const Batch& b) {
  return a.id == b.id && a.completion_id == b.completion_id &&
         a.closed == b.closed && a.total == b.total && a.done == b.done &&
         a.dead == b.dead && a.cancelled == b.cancelled;
}

namespace internal {

// Unimplemented: `store` cannot keep batches. Said once for every store
// that refuses them.
absl::Status NoBatches(absl::string_view store);

}  // namespace internal
}  // namespace delayq

#endif  // DELAYQ_BATCH_H_
