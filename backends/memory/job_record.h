// Copyright delayq authors.
//
// JobRecord — one job as the memory store keeps it, sized for millions of
// pending timers.
//
// The fields every job has are packed into one allocation, times as
// microseconds (what every store keeps), with the id and the payload stored
// right after them: a delayed job with a generated id and a small payload is
// one 128-byte block. What few jobs carry, a backoff other than the default,
// the last error, an expiry and a dedup window, sits in a side record made
// on demand. The topic is not
// copied: the record points at its topic's index, which owns the name.

#ifndef DELAYQ_BACKENDS_MEMORY_JOB_RECORD_H_
#define DELAYQ_BACKENDS_MEMORY_JOB_RECORD_H_

#include <cstdint>
#include <limits>
#include <memory>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "delayq/backend.h"
#include "delayq/job.h"
#include "delayq/timing_wheel.h"

namespace delayq {
namespace memory_internal {

struct TopicIndex;

// Microseconds since the Unix epoch; kNoTime stands for absl::InfinitePast(),
// kNever for absl::InfiniteFuture() (a job that does not expire).
inline constexpr int64_t kNoTime = std::numeric_limits<int64_t>::min();
inline constexpr int64_t kNever = std::numeric_limits<int64_t>::max();
int64_t MicrosOf(absl::Time t);
absl::Time TimeOf(int64_t micros);
// `from` + `ttr`, saturating as absl::Time does (a caller of the Backend API
// may pass durations the scheduler would refuse).
int64_t DeadlineAfter(int64_t from, int64_t ttr);

class JobRecord {
 public:
  struct Deleter {
    void operator()(JobRecord* record) const;
  };
  using Ptr = std::unique_ptr<JobRecord, Deleter>;

  // A new record for `job`, enqueued at `now` as the `seq`-th job.
  static Ptr Make(const NewJob& job, TopicIndex* topic, uint64_t seq,
                  absl::Time now);

  // A copy of this record with another payload (the payload lives in the
  // record's own allocation, so a new one is made).
  Ptr WithPayload(absl::string_view payload) const;

  JobRecord(const JobRecord&) = delete;
  JobRecord& operator=(const JobRecord&) = delete;

  absl::string_view id() const { return {data(), id_size_}; }
  absl::string_view payload() const {
    return {data() + id_size_, payload_size_};
  }
  TopicIndex* topic() const { return topic_; }
  uint64_t seq() const { return seq_; }

  JobState state() const { return state_; }
  int priority() const { return priority_; }
  int attempts() const { return attempts_; }
  int max_attempts() const { return max_attempts_; }
  int64_t run_at() const { return run_at_; }
  int64_t deadline() const { return deadline_; }
  int64_t ttr() const { return ttr_; }
  // The current lease's token while reserved.
  uint64_t token() const { return order_; }
  // The death order while dead; the order of acknowledgement while done.
  uint64_t death_seq() const { return order_; }
  uint64_t done_seq() const { return order_; }
  // When the job died or was acknowledged, while dead or done.
  int64_t finished_at() const { return deadline_; }
  // Retention once acknowledged (µs; 0 for none) and its topic's bound.
  int64_t keep_for() const { return extra_ == nullptr ? 0 : extra_->keep_for; }
  int keep_at_most() const {
    return extra_ == nullptr ? 0 : extra_->keep_at_most;
  }
  // What its worker gave at Ack() ("" unless done).
  absl::string_view result() const {
    return extra_ == nullptr ? absl::string_view() : extra_->result;
  }
  // When a done job leaves the store.
  int64_t leave_at() const { return DeadlineAfter(deadline_, keep_for()); }
  // Its timer in its topic's wheel of delayed jobs while delayed.
  TimerId timer() const {
    return TimerId{static_cast<uint32_t>(order_ >> 32),
                   static_cast<uint32_t>(order_)};
  }
  // Its timer in its topic's wheel of expiries while it may expire.
  TimerId expiry_timer() const {
    return extra_ == nullptr ? TimerId() : extra_->expiry_timer;
  }
  // When the job lapses unless reserved; kNever for never.
  int64_t expire_at() const {
    return extra_ == nullptr ? kNever : extra_->expire_at;
  }
  bool discard_expired() const {
    return extra_ != nullptr && extra_->discard_expired;
  }
  // How long the id stays held after the job leaves (µs); 0 for not at all.
  int64_t unique_for() const {
    return extra_ == nullptr ? 0 : extra_->unique_for;
  }

  // The job as the Backend API shows it.
  Job ToJob() const;

  // --- Changes; the store unlinks the record from its indexes first. -------

  void set_run_at(int64_t micros) { run_at_ = micros; }
  void set_attempts(int attempts) { attempts_ = attempts; }
  void set_deadline(int64_t micros) { deadline_ = micros; }
  void set_timer(TimerId id) {
    order_ = (uint64_t{id.index} << 32) | id.generation;
  }
  // REQUIRES: the job expires (so it has its side record).
  void set_expiry_timer(TimerId id) { extra_->expiry_timer = id; }
  void set_last_error(absl::string_view error);
  // The job no longer expires (a kick).
  void clear_expiry() {
    if (extra_ != nullptr) extra_->expire_at = kNever;
  }

  // Reserved under `token` until `deadline`.
  void Reserve(uint64_t token, int64_t deadline);
  // Dead at `now_us`, as the `death_seq`-th death.
  void Die(uint64_t death_seq, int64_t now_us);
  // Done at `now_us` with `result`, as the `done_seq`-th job kept done.
  // REQUIRES: keep_for() > 0.
  void Finish(uint64_t done_seq, int64_t now_us, absl::string_view result);
  // Delayed, ready or waiting: no lease, no death order.
  void Wait(JobState state);

 private:
  // What few jobs have.
  struct Extra {
    Backoff backoff;
    std::string last_error;
    int64_t expire_at = kNever;
    bool discard_expired = false;
    int64_t unique_for = 0;
    TimerId expiry_timer;
    int64_t keep_for = 0;
    int keep_at_most = 0;
    std::string result;
  };

  JobRecord() = default;
  ~JobRecord() = default;

  const char* data() const { return reinterpret_cast<const char*>(this + 1); }
  char* data() { return reinterpret_cast<char*>(this + 1); }
  Extra& extra();

  int64_t run_at_ = 0;
  int64_t enqueued_at_ = 0;
  int64_t ttr_ = 0;
  int64_t deadline_ = kNoTime;
  uint64_t seq_ = 0;
  // The lease token when reserved, the death order when dead, the order of
  // acknowledgement when done, the timer when delayed: one word for what
  // only one state needs. deadline_ likewise holds the lease's deadline when
  // reserved and when the job finished when dead or done.
  uint64_t order_ = 0;
  TopicIndex* topic_ = nullptr;
  std::unique_ptr<Extra> extra_;
  int32_t priority_ = 0;
  int32_t max_attempts_ = 0;
  int32_t attempts_ = 0;
  uint32_t payload_size_ = 0;
  uint32_t id_size_ = 0;
  JobState state_ = JobState::kReady;
  // The id's bytes, then the payload's, follow the record.
};

}  // namespace memory_internal
}  // namespace delayq

#endif  // DELAYQ_BACKENDS_MEMORY_JOB_RECORD_H_
