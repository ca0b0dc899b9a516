// Copyright delayq authors.
//
// A job's record: the value of its id in the hash "{ns}:jobs", written by
// the scripts (scripts/lib/job.lua) as MessagePack values one after another
// in the order of kRecordFields. The C++ side packs the job's fixed
// settings (the "spec", copied into the record by the add script) and
// decodes whole records (Get, List, Reserve). A test holds these lists to
// job.lua.

#ifndef DELAYQ_BACKENDS_REDIS_INTERNAL_RECORD_H_
#define DELAYQ_BACKENDS_REDIS_INTERNAL_RECORD_H_

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "delayq/backend.h"

namespace delayq {
namespace redis_internal {

// The values of a record, in order. The first twelve are always there; the
// next four follow from the first reservation on (nil where unset), and
// all seven after them for a job that expires, has a dedup window or a
// keep_for, keep_for and keep_at_most too for the last. finished_at is set
// once the job is dead or done, and result while it is done. Times and ttr
// are integer µs; state is an index into kRecordStates; backoff_kind 0 is
// fixed, 1 exponential; token is the lease's while reserved and the order
// of acknowledgement while done. holder and reserved_at follow while the
// job is reserved (ReserveReport::holder, and when it was reserved). after
// (the ids it waits for, MessagePack values in one string) and
// on_dependency_failure follow for a job with dependencies, pending while
// it waits; Get() and List() show after (Job::after), not the other two.
// batch_of names the batch a job joined until its finish is counted there;
// a batch's completion job holds the batch in the last five (closed 0 or 1,
// then its counts; see scripts/lib/batch.lua).
inline constexpr const char* kRecordFields[] = {
    "topic",          "state",       "priority",
    "max_attempts",   "ttr",         "backoff_kind",
    "backoff_base",   "backoff_max", "enqueued_at",
    "run_at",         "seq",         "payload",
    "attempts",       "deadline",    "token",
    "last_error",     "expire_at",   "discard",
    "unique_for",     "keep_for",    "keep_at_most",
    "finished_at",    "result",      "holder",
    "reserved_at",    "after",       "on_dependency_failure",
    "pending",        "batch_of",    "batch_closed",
    "batch_total",    "batch_done",  "batch_dead",
    "batch_cancelled"};
inline constexpr int kRecordMinFields = 12;

// The state values of a record, by index.
inline constexpr const char* kRecordStates[] = {"delayed", "ready", "reserved",
                                                "dead",    "done",  "waiting"};

// Appends the values priority..backoff_max of `job` (the record's third to
// eighth), each in MessagePack's smallest form.
void AppendSpec(const NewJob& job, std::string* out);

// The add script's extras of `job`: the record's expire_at, discard and
// unique_for (nil where unset), then keep_for and keep_at_most when it has a
// keep_for, or nothing when the job has none of them.
void AppendExtras(const NewJob& job, std::string* out);

// The add script's after of `job`: its on_dependency_failure (0 fail, 1
// cancel, 2 run), then the ids of JobOptions::after, each once, in order;
// or nothing when it waits for none.
void AppendAfter(const NewJob& job, std::string* out);

// Decodes a record into `lease` (its job's fields other than the id, the
// token and the deadline; a deadline only for a reserved job, finished_at
// only for a dead or done one). False when `record` is not one.
bool DecodeRecord(absl::string_view record, Lease* lease);

// Decodes the batch a completion job's record holds into `batch` (all but
// its id). False when `record` is no record, or no batch's completion job.
bool DecodeBatch(absl::string_view record, Batch* batch);

// MessagePack of one integer or string, in its smallest form, or of nil;
// for tests and AppendSpec().
void AppendPackedNil(std::string* out);
void AppendPackedInt(int64_t v, std::string* out);
void AppendPackedString(absl::string_view s, std::string* out);

}  // namespace redis_internal
}  // namespace delayq

#endif  // DELAYQ_BACKENDS_REDIS_INTERNAL_RECORD_H_
