// Copyright delayq authors.
//
// event_log.h — the store's log of job transitions, shared by every process.
//
// A Scheduler tells its store of every transition it makes (the events of
// event.h, with its own name as `who`), so the history of a job reads the
// same from any process: the server that enqueued a job shows the
// reservation, failure and acknowledgement of a worker in another process.
// The log is bounded (EventLogOptions::max_events, the oldest leave first)
// and written after the transitions, in batches: a process killed between
// a transition and its batch loses those events, never the transition. The
// counts (counts.h), written inside each transition, are the exact figures.
//
//   auto events = backend->JobEvents("order-17", 100);
//   for (const delayq::LoggedEvent& e : *events) {
//     printf("%s %s by %s\n", absl::FormatTime(e.at).c_str(),
//            std::string(delayq::EventTypeName(e.type)).c_str(),
//            e.who.c_str());
//   }

#ifndef DELAYQ_EVENT_LOG_H_
#define DELAYQ_EVENT_LOG_H_

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "delayq/event.h"

namespace delayq {

// LoggedEvent
//
// One transition as the store's log keeps it.
struct LoggedEvent {
  EventType type = EventType::kEnqueued;
  std::string id;
  std::string topic;
  // The time of the process that made the transition (its scheduler's
  // clock).
  absl::Time at = absl::UnixEpoch();
  // The job's attempts after the transition, where known (0 otherwise).
  int attempts = 0;
  // kFailed, kDead, kLapsed: the error kept with the job.
  std::string error;
  // The name of the process that made it (SchedulerOptions::name).
  std::string who;
};

// The most events a store's log keeps unless told otherwise.
inline constexpr int64_t kDefaultMaxEvents = 100'000;

// EventLogOptions
//
// How many events a store keeps (the stores' options and their URLs'
// `events=N`). Zero turns the log off: AppendEvents() keeps nothing and
// JobEvents() finds nothing.
struct EventLogOptions {
  int64_t max_events = kDefaultMaxEvents;
};

// EventFromLog()
//
// The Event that `logged` records, for code that handles both.
Event EventFromLog(const LoggedEvent& logged);

// LoggedEventOf()
//
// `event` as the log keeps it, made by `who`.
LoggedEvent LoggedEventOf(const Event& event, std::string who);

// AssignLoggedEvent()
//
// LoggedEventOf(), written over `*out`: its strings keep their memory where
// the new ones fit, so code that logs event after event into the same
// LoggedEvents allocates nothing once they have grown.
void AssignLoggedEvent(const Event& event, absl::string_view who,
                       LoggedEvent* out);

// EventTypeFromName()
//
// The inverse of EventTypeName(); false for a name it never returns.
bool EventTypeFromName(absl::string_view name, EventType* type);

}  // namespace delayq

#endif  // DELAYQ_EVENT_LOG_H_
