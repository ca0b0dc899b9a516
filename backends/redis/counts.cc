// Copyright delayq authors.
//
// The Redis store's counts (delayq/counts.h), as scripts/lib/counts.lua
// keeps them, read by one script (counts-3.lua).

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/btree_map.h"
#include "absl/strings/numbers.h"
#include "backends/redis/backend_impl.h"
#include "backends/redis/internal/keys.h"
#include "backends/redis/internal/replies.h"
#include "backends/redis/internal/script_calls.h"
#include "src/common/status_macros.h"
#include "src/common/transition_counts.h"

namespace delayq {
namespace {

using redis_internal::Reply;
using redis_internal::Str;
using redis_internal::Unexpected;
using redis_internal::Word;

// The count a kind letter of counts.lua names in `c`; null for none.
int64_t* CountOfKind(char kind, JobCounts* c) {
  switch (kind) {
    case 'e':
      return &c->enqueued;
    case 'd':
      return &c->done;
    case 'f':
      return &c->failed;
    case 'r':
      return &c->retried;
    case 'x':
      return &c->expired;
    case 'k':
      return &c->dead;
    case 'l':
      return &c->lapsed;
    default:
      if (kind >= '0' && kind < '0' + kLatenessBuckets) {
        return &c->lateness[kind - '0'];
      }
      return nullptr;
  }
}

// Adds an HGETALL reply of "<kind>:<topic>" fields to `by_topic`. False for
// a reply that is not one.
bool AddFields(const redisReply* fields,
               absl::btree_map<std::string, JobCounts>* by_topic) {
  if (fields->type != REDIS_REPLY_ARRAY || fields->elements % 2 != 0) {
    return false;
  }
  for (size_t i = 0; i < fields->elements; i += 2) {
    const std::string field = Str(fields->element[i]);
    int64_t n = 0;
    if (field.size() < 2 || field[1] != ':' ||
        !absl::SimpleAtoi(Str(fields->element[i + 1]), &n)) {
      return false;
    }
    int64_t* count = CountOfKind(field[0], &(*by_topic)[field.substr(2)]);
    if (count == nullptr) return false;
    *count += n;
  }
  return true;
}

}  // namespace

absl::StatusOr<redis_internal::Reply> RedisBackend::ReadCounts(
    int64_t first_minute_us, int64_t last_minute_us) {
  auto a = Keyed<redis_internal::CountsArgs>();
  a.count_minutes = keys_.CountMinutes();
  a.count_totals = keys_.CountTotals();
  a.first_minute = absl::StrCat(first_minute_us);
  a.last_minute = absl::StrCat(last_minute_us);
  DQ_ASSIGN_OR_RETURN(Reply r, RunOne(redis_internal::ToCall(std::move(a))));
  if (Word(r.get()) != redis_internal::kOk || r->elements < 2 ||
      r->elements % 2 != 0) {
    return Unexpected(r.get(), "counts");
  }
  return r;
}

absl::StatusOr<std::vector<TopicMinute>> RedisBackend::Counts(absl::Time from,
                                                              absl::Time to) {
  DQ_ASSIGN_OR_RETURN(
      Reply r, ReadCounts(internal::MinuteMicrosOf(absl::ToUnixMicros(from)),
                          absl::ToUnixMicros(to)));
  std::vector<TopicMinute> out;
  for (size_t i = 2; i < r->elements; i += 2) {
    int64_t minute_us = 0;
    absl::btree_map<std::string, JobCounts> by_topic;
    if (!absl::SimpleAtoi(Str(r->element[i]), &minute_us) ||
        !AddFields(r->element[i + 1], &by_topic)) {
      return Unexpected(r.get(), "counts");
    }
    for (auto& [topic, counts] : by_topic) {
      out.push_back({topic, absl::FromUnixMicros(minute_us), counts});
    }
  }
  return out;
}

absl::StatusOr<std::vector<TopicTotals>> RedisBackend::CountTotals() {
  // No minute is after 0 and before -1: the totals alone.
  DQ_ASSIGN_OR_RETURN(Reply r, ReadCounts(0, -1));
  absl::btree_map<std::string, JobCounts> by_topic;
  if (!AddFields(r->element[1], &by_topic))
    return Unexpected(r.get(), "counts");
  std::vector<TopicTotals> out;
  for (auto& [topic, counts] : by_topic) out.push_back({topic, counts});
  return out;
}

}  // namespace delayq
