// Copyright delayq authors.
//
// metrics.h — what a scheduler did, in numbers, for Prometheus.
//
// A Metrics object counts a scheduler's events and times its store's calls,
// and renders them with the topics' current counts in the Prometheus text
// format (version 0.0.4), for a program to serve on its own /metrics
// endpoint (`delayq serve` serves it on its own):
//
//   delayq::Metrics metrics;
//   auto scheduler = delayq::Scheduler::Create(
//       metrics.Instrument(delayq::OpenBackend(url).value())).value();
//   metrics.Attach(*scheduler);
//   ...
//   std::string body = metrics.PrometheusText();  // on GET /metrics
//
// What it exports:
//   delayq_jobs{topic,state}                  gauge: jobs per state, read
//                                             from the store when rendered
//   delayq_topic_paused{topic}                gauge: 1 while paused
//   delayq_job_events_total{topic,event}      counter: enqueued, promoted,
//                                             reserved, succeeded, failed,
//                                             retried, dead, expired,
//                                             cancelled
//   delayq_delivery_lateness_seconds{topic}   histogram: first reservation
//                                             minus the time the job came due
//   delayq_handler_seconds{topic}             histogram: reservation to ack
//                                             or fail, in this process, of
//                                             leases that say when they
//                                             began (Lease::reserved_at)
//   delayq_store_transitions_total{topic,transition}
//                                             counter: enqueued, done,
//                                             failed, retried, expired,
//                                             dead, lapsed, as the store
//                                             counted them (counts.h): the
//                                             same from every process
//   delayq_store_deliveries_total{topic,late_within}
//                                             counter: reservations by how
//                                             late they came (buckets up to
//                                             0.01, 0.1, 1, 10, 60, +Inf s;
//                                             not cumulative), from the store
//   delayq_ready_job_age_seconds{topic}       gauge: how long the next ready
//                                             job (in ready order) has been
//                                             due
//   delayq_topic_limit_rate{topic}            gauge: a limit's reservations
//                                             per second; and _concurrency
//   delayq_schedule_last_run_timestamp_seconds{schedule}, and _next_run_
//                                             gauges: Unix seconds
//   delayq_build_info{version}                gauge: 1
//   delayq_store_call_seconds{call}           histogram: each store call
//   delayq_store_call_errors_total{call,code} counter: store calls the
//                                             store could not answer
//                                             (unreachable, timed out,
//                                             damaged), by absl code
//   delayq_store_call_refusals_total{call,code}
//                                             counter: calls the store
//                                             refused as its contract says
//                                             (NotFound, AlreadyExists,
//                                             FailedPrecondition, ...): the
//                                             caller's doing, not the store's
//
// Events are those of the attached scheduler (event.h): jobs that other
// processes move on a shared store count there, not here; the gauges and
// the delayq_store_* counters show the whole store. The store's counters
// are shown for the topics it has and those it counted work of in the last
// `topic_idle` (within a minute: the store counts by the minute).
//
// The gauges show the topics the store has: with jobs, paused or limited.
// A topic's event counters and histograms are dropped, at a rendering, once
// the store no longer has the topic and this object has seen none of its
// events for `topic_idle` (10 minutes by default), so that topics that come
// and go do not grow the text without end. A topic that comes back starts
// its counters from zero, which Prometheus reads as a counter reset.
//
// Thread-safe. A Metrics object must outlive the backends it instrumented
// and the scheduler it is attached to: declare it before them.

#ifndef DELAYQ_METRICS_H_
#define DELAYQ_METRICS_H_

#include <memory>
#include <string>

#include "absl/time/time.h"
#include "delayq/backend.h"
#include "delayq/clock.h"
#include "delayq/event.h"
#include "delayq/scheduler.h"

namespace delayq {

class Metrics {
 public:
  // The default for how long a topic the store no longer has keeps its
  // series after its last event here.
  static constexpr absl::Duration kDefaultTopicIdle = absl::Minutes(10);

  // `clock` times store calls and topics' idleness (pass the scheduler's);
  // the default is the real clock.
  explicit Metrics(Clock* clock = nullptr,
                   absl::Duration topic_idle = kDefaultTopicIdle);
  ~Metrics();

  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  // Instrument()
  //
  // Returns a backend that forwards every call to `backend` and records how
  // long it took and, when it failed, its code. Pass it to
  // Scheduler::Create().
  std::unique_ptr<Backend> Instrument(std::unique_ptr<Backend> backend);

  // Attach()
  //
  // Listens to `scheduler`'s events, and reads its topics' counts in
  // PrometheusText(). One scheduler per Metrics; attaching again moves the
  // attachment (the first scheduler must still exist then).
  void Attach(Scheduler& scheduler);

  // Record()
  //
  // Counts one event, as the listener Attach() adds does: for programs that
  // feed events from a listener of their own.
  void Record(const Event& event);

  // PrometheusText()
  //
  // Every metric above in the Prometheus text format. The gauges are read
  // from the attached scheduler's store now; a store that cannot be read
  // leaves them out and counts delayq_metrics_store_errors_total.
  std::string PrometheusText();

 private:
  class State;
  std::unique_ptr<State> state_;
};

}  // namespace delayq

#endif  // DELAYQ_METRICS_H_
