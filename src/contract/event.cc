// Copyright delayq authors.

#include "delayq/event.h"

#include <string>
#include <utility>

#include "delayq/event_log.h"

namespace delayq {

absl::string_view EventTypeName(EventType type) {
  switch (type) {
    case EventType::kEnqueued:
      return "enqueued";
    case EventType::kPromoted:
      return "promoted";
    case EventType::kReserved:
      return "reserved";
    case EventType::kSucceeded:
      return "succeeded";
    case EventType::kFailed:
      return "failed";
    case EventType::kRetried:
      return "retried";
    case EventType::kDead:
      return "dead";
    case EventType::kExpired:
      return "expired";
    case EventType::kCancelled:
      return "cancelled";
    case EventType::kLapsed:
      return "lapsed";
    case EventType::kKicked:
      return "kicked";
    case EventType::kUnblocked:
      return "unblocked";
  }
  return "unknown";
}

bool EventTypeFromName(absl::string_view name, EventType* type) {
  for (EventType t :
       {EventType::kEnqueued, EventType::kPromoted, EventType::kReserved,
        EventType::kSucceeded, EventType::kFailed, EventType::kRetried,
        EventType::kDead, EventType::kExpired, EventType::kCancelled,
        EventType::kLapsed, EventType::kKicked, EventType::kUnblocked}) {
    if (EventTypeName(t) == name) {
      *type = t;
      return true;
    }
  }
  return false;
}

Event EventFromLog(const LoggedEvent& logged) {
  Event event;
  event.type = logged.type;
  event.id = logged.id;
  event.topic = logged.topic;
  event.at = logged.at;
  event.attempts = logged.attempts;
  event.error = logged.error;
  return event;
}

LoggedEvent LoggedEventOf(const Event& event, std::string who) {
  LoggedEvent logged;
  AssignLoggedEvent(event, "", &logged);
  logged.who = std::move(who);
  return logged;
}

void AssignLoggedEvent(const Event& event, absl::string_view who,
                       LoggedEvent* out) {
  out->type = event.type;
  out->id.assign(event.id);
  out->topic.assign(event.topic);
  out->at = event.at;
  out->attempts = event.attempts;
  out->error.assign(event.error);
  out->who.assign(who.data(), who.size());
}

}  // namespace delayq
