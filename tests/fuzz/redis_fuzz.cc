// Copyright delayq authors.
//
// What the Redis store reads back from Redis: the scripts' reply trees
// (backends/redis/internal/replies.h) and the MessagePack job records in
// them (record.h).
//
// The input's first part is RESP bytes, which the store's connections' reader
// (backends/redis/client/reply_reader.h) turns into reply trees;
// the rest builds a job.
//
// Properties:
//   - the reader allocates in proportion to the bytes it was given: a
//     header announcing a billion elements takes no memory up front
//     (libFuzzer's malloc limit fails the run otherwise);
//   - every reply decoder (Str, Int, TimeOf, Word, ParseSnapshot,
//     ParseSnapshots, ParseLease, ParseTransition), on every node of every
//     tree, returns a value or a status; a lease it reads is reserved;
//     Int() of a number's text keeps its sign (a number past int64 is
//     clamped, not wrapped);
//   - a record as the scripts write it (topic, state, AppendSpec(),
//     enqueued_at, run_at, seq, payload, then attempts, deadline, token,
//     last_error, then AppendExtras()) decodes to the job it was made from;
//   - whatever record decodes, written again field by field decodes to the
//     same job (the decoder reads each value one way only).

#include <hiredis/hiredis.h>
#include <hiredis/read.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "backends/redis/client/reply_reader.h"
#include "backends/redis/internal/record.h"
#include "backends/redis/internal/replies.h"
#include "delayq/backend.h"
#include "fuzzer/FuzzedDataProvider.h"
#include "src/common/backoff_code.h"
#include "tests/fuzz/fuzz_check.h"

namespace delayq {
namespace {

using namespace redis_internal;  // NOLINT: the decoders under test

// Nodes visited per input at most: a reply may be wide.
constexpr int kMaxNodes = 2000;

void Decode(const redisReply* r, int* budget) {
  if (r == nullptr || --*budget < 0) return;
  const std::string text = Str(r);
  const int64_t number = Int(r);
  double d = 0;
  if (r->type != REDIS_REPLY_INTEGER && absl::SimpleAtod(text, &d)) {
    FUZZ_CHECK(!(d >= 1 && number <= 0) && !(d <= -1 && number >= 0),
               "Int() of \"", fuzz::Escaped(text), "\" is ", number);
  }
  (void)TimeOf(r);
  (void)Word(r);
  (void)Unexpected(r, "fuzz");
  (void)ParseSnapshot(r);
  (void)ParseSnapshots(r, "fuzz");
  absl::StatusOr<Lease> lease = ParseLease(r);
  if (lease.ok()) {
    FUZZ_CHECK(lease->job.state == JobState::kReserved,
               "ParseLease() read a job in state ",
               JobStateName(lease->job.state));
  }
  std::vector<Settled> settled;
  (void)ParseTransition(r, "fuzz", &settled);
  if (IsSettled(r)) (void)ParseSettled(r, "fuzz");
  (void)ParseSettledFrom(r, 0, "fuzz", &settled);
  if (r->type == REDIS_REPLY_ARRAY) {
    for (size_t i = 0; i < r->elements; ++i) Decode(r->element[i], budget);
  }
}

void CheckReplies(const std::string& resp) {
  redisReader* reader = NewReplyReader();
  FUZZ_CHECK(reader != nullptr, "NewReplyReader");
  redisReaderFeed(reader, resp.data(), resp.size());
  int budget = kMaxNodes;
  for (;;) {
    void* reply = nullptr;
    if (redisReaderGetReply(reader, &reply) != REDIS_OK || reply == nullptr) {
      break;
    }
    Decode(static_cast<redisReply*>(reply), &budget);
    freeReplyObject(reply);
  }
  redisReaderFree(reader);
}

// A record with all nineteen values, each written as the value it decodes
// from (nil where the decoder reads "unset").
std::string EncodeRecord(const Lease& lease) {
  const Job& job = lease.job;
  std::string out;
  AppendPackedString(job.topic, &out);
  AppendPackedInt(static_cast<int>(job.state), &out);
  AppendPackedInt(job.priority, &out);
  AppendPackedInt(job.max_attempts, &out);
  AppendPackedInt(absl::ToInt64Microseconds(job.ttr), &out);
  AppendPackedInt(internal::BackoffCode(job.backoff), &out);
  AppendPackedInt(absl::ToInt64Microseconds(job.backoff.base), &out);
  AppendPackedInt(absl::ToInt64Microseconds(job.backoff.max), &out);
  AppendPackedInt(absl::ToUnixMicros(job.enqueued_at), &out);
  AppendPackedInt(absl::ToUnixMicros(job.run_at), &out);
  AppendPackedInt(0, &out);  // seq: not part of a job
  AppendPackedString(job.payload, &out);
  AppendPackedInt(job.attempts, &out);
  if (job.deadline == absl::InfinitePast()) {
    AppendPackedNil(&out);
  } else {
    AppendPackedInt(absl::ToUnixMicros(job.deadline), &out);
  }
  AppendPackedInt(static_cast<int64_t>(lease.token), &out);
  AppendPackedString(job.last_error, &out);
  if (job.expire_at == absl::InfiniteFuture()) {
    AppendPackedNil(&out);
  } else {
    AppendPackedInt(absl::ToUnixMicros(job.expire_at), &out);
  }
  AppendPackedInt(job.discard_expired ? 1 : 0, &out);
  AppendPackedInt(absl::ToInt64Microseconds(job.unique_for), &out);
  return out;
}

std::string Describe(const Lease& l) {
  const Job& j = l.job;
  return absl::StrCat(
      "{topic=", fuzz::Escaped(j.topic), " state=", JobStateName(j.state),
      " priority=", j.priority, " max_attempts=", j.max_attempts,
      " ttr=", absl::FormatDuration(j.ttr),
      " backoff=", static_cast<int>(j.backoff.kind), "/",
      absl::FormatDuration(j.backoff.base), "/",
      absl::FormatDuration(j.backoff.max), "/", j.backoff.jitter,
      " enqueued_at=", absl::FormatTime(j.enqueued_at),
      " run_at=", absl::FormatTime(j.run_at),
      " payload=", fuzz::Escaped(j.payload), " attempts=", j.attempts,
      " deadline=", absl::FormatTime(j.deadline), "/",
      absl::FormatTime(l.deadline), " token=", l.token,
      " last_error=", fuzz::Escaped(j.last_error),
      " expire_at=", absl::FormatTime(j.expire_at),
      " discard=", j.discard_expired,
      " unique_for=", absl::FormatDuration(j.unique_for), "}");
}

void CheckRecordBytes(const std::string& bytes) {
  Lease first;
  if (!DecodeRecord(bytes, &first)) return;
  // A jitter past [0, 1] reads as it is but is written clamped (as every
  // use of it clamps it); the rest must come back exactly.
  first.job.backoff.jitter = std::clamp(first.job.backoff.jitter, 0.0, 1.0);
  const std::string again = EncodeRecord(first);
  Lease second;
  FUZZ_CHECK(DecodeRecord(again, &second), "record \"", fuzz::Escaped(bytes),
             "\" decodes as ", Describe(first), ", which, written again, ",
             "does not decode");
  FUZZ_CHECK(Describe(first) == Describe(second), "record \"",
             fuzz::Escaped(bytes), "\" decodes as\n  ", Describe(first),
             "\nand written again as\n  ", Describe(second));
}

void CheckRoundTrip(FuzzedDataProvider& in) {
  constexpr int64_t kMaxMicros = int64_t{1} << 52;  // what scripts hold
  auto micros = [&in](int64_t lo) {
    return in.ConsumeIntegralInRange<int64_t>(lo, kMaxMicros);
  };
  NewJob job;
  job.topic = in.ConsumeRandomLengthString(40);
  job.priority = in.ConsumeIntegral<int>();
  job.max_attempts = in.ConsumeIntegral<int>();
  job.ttr = absl::Microseconds(micros(0));
  const absl::Duration base = absl::Microseconds(micros(0));
  job.backoff = in.ConsumeBool()
                    ? Backoff::Fixed(base)
                    : Backoff::Exponential(base, absl::Microseconds(micros(0)));
  job.backoff.jitter = in.ConsumeIntegralInRange(0, 1'000'000) / 1e6;
  job.run_at = absl::FromUnixMicros(micros(-kMaxMicros));
  const absl::Time enqueued_at = absl::FromUnixMicros(micros(-kMaxMicros));
  const int state = in.ConsumeIntegralInRange(0, 3);
  const bool reserved_once = in.ConsumeBool();
  const int attempts = reserved_once ? in.ConsumeIntegral<int>() : 0;
  const bool has_deadline = reserved_once && in.ConsumeBool();
  const int64_t deadline = micros(-kMaxMicros);
  const uint64_t token = reserved_once ? in.ConsumeIntegral<uint64_t>() : 0;
  const std::string last_error =
      reserved_once ? in.ConsumeRandomLengthString(40) : "";
  if (in.ConsumeBool()) {
    job.expire_at = absl::FromUnixMicros(micros(-kMaxMicros));
    job.discard_expired = in.ConsumeBool();
  }
  if (in.ConsumeBool()) job.unique_for = absl::Microseconds(micros(1));
  job.payload = in.ConsumeRemainingBytesAsString();

  std::string record;
  AppendPackedString(job.topic, &record);
  AppendPackedInt(state, &record);
  AppendSpec(job, &record);
  AppendPackedInt(absl::ToUnixMicros(enqueued_at), &record);
  AppendPackedInt(absl::ToUnixMicros(job.run_at), &record);
  AppendPackedInt(7, &record);  // seq
  AppendPackedString(job.payload, &record);
  std::string extras;
  AppendExtras(job, &extras);
  if (reserved_once || !extras.empty()) {
    AppendPackedInt(attempts, &record);
    if (has_deadline) {
      AppendPackedInt(deadline, &record);
    } else {
      AppendPackedNil(&record);
    }
    AppendPackedInt(static_cast<int64_t>(token), &record);
    AppendPackedString(last_error, &record);
    record += extras;
  }

  Lease want;
  Job& w = want.job;
  w.topic = job.topic;
  w.state = static_cast<JobState>(state);
  w.priority = job.priority;
  w.max_attempts = job.max_attempts;
  w.ttr = job.ttr;
  w.backoff = job.backoff;
  w.enqueued_at = enqueued_at;
  w.run_at = job.run_at;
  w.payload = job.payload;
  w.attempts = attempts;
  w.deadline = has_deadline && w.state == JobState::kReserved
                   ? absl::FromUnixMicros(deadline)
                   : absl::InfinitePast();
  want.deadline = w.deadline;
  want.token = token;
  w.last_error = last_error;
  w.expire_at = job.expire_at;
  w.discard_expired = job.discard_expired;
  w.unique_for = job.unique_for;

  Lease got;
  FUZZ_CHECK(DecodeRecord(record, &got), "the record of ", Describe(want),
             " does not decode: ", fuzz::Escaped(record));
  FUZZ_CHECK(Describe(got) == Describe(want), "the record of\n  ",
             Describe(want), "\ndecodes as\n  ", Describe(got));
}

}  // namespace
}  // namespace delayq

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace delayq;  // NOLINT: the entry point is outside the namespace
  FuzzedDataProvider in(data, size);
  const std::string resp = in.ConsumeRandomLengthString(4096);
  CheckReplies(resp);
  CheckRecordBytes(resp);
  CheckRoundTrip(in);
  return 0;
}
