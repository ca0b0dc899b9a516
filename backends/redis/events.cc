// Copyright delayq authors.
//
// The Redis store's event log (delayq/event_log.h): one stream per
// namespace (KeyLayout::Events()), appended with XADD and trimmed by it to
// about max_events (MAXLEN ~: Redis trims whole nodes, so a few more may
// stay). Reading one job's events scans the stream from the newest entry
// back, in growing chunks, until `limit` of them are found or the stream
// ends: a look at a job that acted recently reads a chunk or two, one that
// left the log reads it all (max_events / 1000 round trips at most).

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "backends/redis/backend_impl.h"
#include "backends/redis/internal/keys.h"
#include "backends/redis/internal/replies.h"
#include "src/common/status_macros.h"

namespace delayq {
namespace {

using redis_internal::Reply;

// The chunks a read takes from the stream: small first, since the events
// asked for are usually recent.
constexpr int64_t kFirstChunk = 256;
constexpr int64_t kLargestChunk = 4096;

absl::string_view Text(const redisReply* r) {
  return absl::string_view(r->str, r->len);
}

// Decodes a stream entry's field list into `e`; false for one that is not
// an event of this build (another writer's, or a newer type).
bool DecodeFields(const redisReply* fields, LoggedEvent* e) {
  if (fields->type != REDIS_REPLY_ARRAY || fields->elements % 2 != 0) {
    return false;
  }
  bool typed = false;
  for (size_t i = 0; i < fields->elements; i += 2) {
    const redisReply* name = fields->element[i];
    const redisReply* value = fields->element[i + 1];
    if (name->type != REDIS_REPLY_STRING || value->type != REDIS_REPLY_STRING ||
        name->len != 1) {
      return false;
    }
    const absl::string_view v = Text(value);
    int64_t n = 0;
    switch (name->str[0]) {
      case 'i':
        e->id = std::string(v);
        break;
      case 't':
        e->topic = std::string(v);
        break;
      case 'y':
        typed = EventTypeFromName(v, &e->type);
        break;
      case 'a':
        if (!absl::SimpleAtoi(v, &n)) return false;
        e->at = absl::FromUnixMicros(n);
        break;
      case 'n':
        if (!absl::SimpleAtoi(v, &n)) return false;
        e->attempts = static_cast<int>(n);
        break;
      case 'e':
        e->error = std::string(v);
        break;
      case 'w':
        e->who = std::string(v);
        break;
      default:
        break;
    }
  }
  return typed;
}

}  // namespace

absl::Status RedisBackend::AppendEvents(absl::Span<const LoggedEvent> events) {
  if (events.empty() || options_.events.max_events <= 0) {
    return absl::OkStatus();
  }
  const std::string key = keys_.Events();
  const std::string max = absl::StrCat(options_.events.max_events);
  std::vector<std::vector<std::string>> commands;
  commands.reserve(events.size());
  for (const LoggedEvent& e : events) {
    commands.push_back({"XADD",   key,
                        "MAXLEN", "~",
                        max,      "*",
                        "i",      e.id,
                        "t",      e.topic,
                        "y",      std::string(EventTypeName(e.type)),
                        "a",      absl::StrCat(absl::ToUnixMicros(e.at)),
                        "n",      absl::StrCat(e.attempts),
                        "e",      e.error,
                        "w",      e.who});
  }
  DQ_ASSIGN_OR_RETURN(std::vector<Reply> replies, pool_.Pipeline(commands));
  for (const Reply& r : replies) {
    if (r->type == REDIS_REPLY_ERROR) {
      return redis_internal::ErrorReplyStatus(Text(r.get()));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<LoggedEvent>> RedisBackend::JobEvents(
    absl::string_view id, int limit) {
  std::vector<LoggedEvent> found;  // newest first
  const std::string key = keys_.Events();
  std::string end = "+";
  int64_t chunk = kFirstChunk;
  while (static_cast<int>(found.size()) < limit) {
    DQ_ASSIGN_OR_RETURN(std::vector<Reply> replies,
                        pool_.Pipeline({{"XREVRANGE", key, end, "-", "COUNT",
                                         absl::StrCat(chunk)}}));
    const redisReply* r = replies[0].get();
    if (r->type == REDIS_REPLY_ERROR) {
      return redis_internal::ErrorReplyStatus(Text(r));
    }
    if (r->type != REDIS_REPLY_ARRAY) {
      return absl::InternalError(
          "redis: XREVRANGE of the event log: not a list");
    }
    for (size_t i = 0; i < r->elements; ++i) {
      const redisReply* entry = r->element[i];
      if (entry->type != REDIS_REPLY_ARRAY || entry->elements != 2 ||
          entry->element[0]->type != REDIS_REPLY_STRING) {
        return absl::InternalError("redis: malformed event log entry");
      }
      end = absl::StrCat("(", Text(entry->element[0]));
      LoggedEvent e;
      if (DecodeFields(entry->element[1], &e) && e.id == id &&
          static_cast<int>(found.size()) < limit) {
        found.push_back(std::move(e));
      }
    }
    if (static_cast<int64_t>(r->elements) < chunk) break;  // the stream's end
    chunk = std::min(chunk * 2, kLargestChunk);
  }
  std::reverse(found.begin(), found.end());
  return found;
}

}  // namespace delayq
