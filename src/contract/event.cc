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
  logged.type = event.type;
  logged.id = event.id;
  logged.topic = event.topic;
  logged.at = event.at;
  logged.attempts = event.attempts;
  logged.error = event.error;
  logged.who = std::move(who);
  return logged;
}

}  // namespace delayq
