// Copyright delayq authors.

#include "backends/redis/internal/replies.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "backends/redis/internal/record.h"

namespace delayq {
namespace redis_internal {

namespace {

constexpr int64_t kMaxMicros = int64_t{1} << 52;

}  // namespace

int64_t ClampMicros(absl::Time t) {
  return std::clamp(absl::ToUnixMicros(t), -kMaxMicros, kMaxMicros);
}

int64_t DurationMicros(absl::Duration d) {
  return std::clamp(absl::ToInt64Microseconds(d), int64_t{0}, kMaxMicros);
}

std::string Str(const redisReply* r) {
  if (r == nullptr || r->type == REDIS_REPLY_NIL) return "";
  if (r->type == REDIS_REPLY_INTEGER) return absl::StrCat(r->integer);
  return std::string(r->str, r->len);
}

int64_t Int(const redisReply* r) {
  if (r != nullptr && r->type == REDIS_REPLY_INTEGER) return r->integer;
  int64_t v = 0;
  double d = 0;
  const std::string s = Str(r);
  if (absl::SimpleAtoi(s, &v)) return v;
  // Lua numbers written back by HSET may come as "1e+15"-style text.
  if (!absl::SimpleAtod(s, &d) || std::isnan(d)) return 0;
  // Converting a double outside int64's range is undefined: clamp first.
  if (d >= 0x1p63) return std::numeric_limits<int64_t>::max();
  if (d < -0x1p63) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(d);
}

absl::Time TimeOf(const redisReply* r) {
  if (Str(r).empty()) return absl::InfinitePast();
  return absl::FromUnixMicros(Int(r));
}

namespace {

absl::Status BadRecord(absl::string_view id) {
  return absl::InternalError(
      absl::StrCat("redis: job '", id, "' has a malformed record"));
}

}  // namespace

std::string Word(const redisReply* r) {
  if (r->type != REDIS_REPLY_ARRAY || r->elements == 0) return "";
  return Str(r->element[0]);
}

absl::Status Unexpected(const redisReply* r, absl::string_view script) {
  return absl::InternalError(
      absl::StrCat("redis: unexpected reply from ", script, " script"));
}

absl::StatusOr<Lease> ParseSnapshot(const redisReply* r) {
  constexpr size_t kCount = std::size(kSnapshotFields);
  if (r->type != REDIS_REPLY_ARRAY || r->elements != kCount ||
      r->element[FieldAt(kSnapshotFields, "record")]->type !=
          REDIS_REPLY_STRING) {
    return absl::InternalError("redis: malformed job snapshot");
  }
  const redisReply* record = r->element[FieldAt(kSnapshotFields, "record")];
  Lease lease;
  lease.job.id = Str(r->element[FieldAt(kSnapshotFields, "id")]);
  if (!DecodeRecord(absl::string_view(record->str, record->len), &lease)) {
    return BadRecord(lease.job.id);
  }
  return lease;
}

absl::StatusOr<std::vector<Lease>> ParseSnapshots(const redisReply* r,
                                                  absl::string_view script) {
  if (Word(r) != "OK") return Unexpected(r, script);
  std::vector<Lease> out;
  out.reserve(r->elements - 1);
  for (size_t i = 1; i < r->elements; ++i) {
    absl::StatusOr<Lease> lease = ParseSnapshot(r->element[i]);
    if (!lease.ok()) return lease.status();
    out.push_back(std::move(*lease));
  }
  return out;
}

absl::StatusOr<Lease> ParseLease(const redisReply* r) {
  constexpr size_t kFields = std::size(kLeaseFields);
  if (r->type != REDIS_REPLY_ARRAY || r->elements < kFields ||
      (r->elements - kFields) % 2 != 0) {
    return absl::InternalError("redis: malformed lease");
  }
  const redisReply* record = r->element[FieldAt(kLeaseFields, "record")];
  Lease lease;
  lease.job.id = Str(r->element[FieldAt(kLeaseFields, "id")]);
  if (record->type != REDIS_REPLY_STRING ||
      !DecodeRecord(absl::string_view(record->str, record->len), &lease) ||
      lease.job.state != JobState::kReserved) {
    return BadRecord(lease.job.id);
  }
  // Then the results its dependencies left (lib/results.lua).
  for (size_t i = kFields; i < r->elements; i += 2) {
    lease.dependency_results[Str(r->element[i])] = Str(r->element[i + 1]);
  }
  return lease;
}

bool IsSettled(const redisReply* r) {
  return r->type == REDIS_REPLY_ARRAY &&
         r->elements == std::size(kSettledFields) &&
         Str(r->element[FieldAt(kSettledFields, "word")]) == "settled";
}

absl::StatusOr<Settled> ParseSettled(const redisReply* r,
                                     absl::string_view script) {
  auto at = [r](const char* name) {
    return r->element[FieldAt(kSettledFields, name)];
  };
  Settled s;
  const std::string state = Str(at("state"));
  if (state == "ready") {
    s.kind = Settled::Kind::kReady;
  } else if (state == "delayed") {
    s.kind = Settled::Kind::kDelayed;
  } else if (state == "dead") {
    s.kind = Settled::Kind::kDead;
  } else if (state == "cancelled") {
    s.kind = Settled::Kind::kCancelled;
  } else {
    return Unexpected(r, script);
  }
  s.id = Str(at("id"));
  s.topic = Str(at("topic"));
  s.error = Str(at("error"));
  return s;
}

absl::Status ParseSettledFrom(const redisReply* reply, size_t first,
                              absl::string_view script,
                              std::vector<Settled>* settled) {
  for (size_t i = first; i < reply->elements; ++i) {
    const redisReply* e = reply->element[i];
    if (!IsSettled(e)) return Unexpected(reply, script);
    if (settled == nullptr) continue;
    absl::StatusOr<Settled> s = ParseSettled(e, script);
    if (!s.ok()) return s.status();
    settled->push_back(*std::move(s));
  }
  return absl::OkStatus();
}

absl::StatusOr<Transition> ParseTransition(const redisReply* t,
                                           absl::string_view script,
                                           std::vector<Settled>* settled) {
  if (t->type != REDIS_REPLY_ARRAY ||
      t->elements < std::size(kTransitionFields)) {
    return Unexpected(t, script);
  }
  if (absl::Status s =
          ParseSettledFrom(t, std::size(kTransitionFields), script, settled);
      !s.ok()) {
    return s;
  }
  auto at = [t](const char* name) {
    return t->element[FieldAt(kTransitionFields, name)];
  };
  Transition tr;
  const std::string kind = Str(at("kind"));
  if (kind == "promoted") {
    tr.kind = Transition::Kind::kPromoted;
  } else if (kind == "expired") {
    tr.kind = Transition::Kind::kExpired;
  } else if (kind == "dead") {
    tr.kind = Transition::Kind::kDead;
  } else if (kind == "lapsed") {
    tr.kind = Transition::Kind::kLapsed;
  } else if (kind == "discarded") {
    tr.kind = Transition::Kind::kDiscarded;
  } else {
    return Unexpected(t, script);
  }
  tr.id = Str(at("id"));
  tr.topic = Str(at("topic"));
  tr.attempts = static_cast<int>(Int(at("attempts")));
  return tr;
}

const std::vector<ScriptWords>& ReplyWords() {
  static const auto* words = new std::vector<ScriptWords>{
      {"ack", {kOk, kStale}},
      {"ack_batch", {kOk}},
      {"ack_reserve", {kOk}},
      {"add", {kOk, kExists, kNoDependency, kNoBatch, kClosed}},
      {"batch_close", {kOk, kNoBatch}},
      {"cancel", {kOk, kNotFound}},
      {"check_ids", {kOk, kExists}},
      {"counts", {kOk}},
      {"fail", {kRetry, kDead, kStale}},
      {"kick", {kOk}},
      {"kick_job", {kOk, kNotFound, kNotDead}},
      {"limit", {kOk}},
      {"promote_job", {kOk, kNotFound, kNotDelayed}},
      {"purge_dead", {kOk}},
      {"list", {kOk}},
      {"next_due", {kOk}},
      {"open", {kOk, kOldLayout, kNewerLayout}},
      {"pause", {kOk}},
      {"promote_due", {kOk}},
      {"replace", {kOk, kNotFound, kBusy, kOtherTopic}},
      {"release", {kOk, kStale}},
      {"reserve", {kOk}},
      {"schedule_fire", {kOk, kNotFound, kMoved, kExists}},
      {"schedule_put", {kOk}},
      {"schedule_remove", {kOk, kNotFound}},
      {"schedules", {kOk}},
      {"shard_meta", {kOk, kOtherShards}},
      {"stats", {kOk}},
      {"touch", {kOk, kStale}},
      {"withdraw", {kOk}},
  };
  return *words;
}

}  // namespace redis_internal
}  // namespace delayq
