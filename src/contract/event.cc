// Copyright delayq authors.

#include "delayq/event.h"

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
  }
  return "unknown";
}

}  // namespace delayq
