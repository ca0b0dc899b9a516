// Copyright delayq authors.

#include "backends/memory/job_record.h"

#include <cstring>
#include <limits>
#include <new>
#include <utility>

#include "backends/memory/topic_index.h"

namespace delayq {
namespace memory_internal {

// The fields of a job with the id and payload after them: with a generated
// id and a small payload, a 128-byte block. A field more would make it 144.
static_assert(sizeof(JobRecord) <= 88, "see job_record.h");

int64_t MicrosOf(absl::Time t) {
  return t == absl::InfinitePast() ? kNoTime : absl::ToUnixMicros(t);
}

absl::Time TimeOf(int64_t micros) {
  return micros == kNoTime ? absl::InfinitePast()
                           : absl::FromUnixMicros(micros);
}

int64_t DeadlineAfter(int64_t from, int64_t ttr) {
  int64_t sum;
  if (!__builtin_add_overflow(from, ttr, &sum)) return sum;
  return ttr > 0 ? std::numeric_limits<int64_t>::max() : kNoTime + 1;
}

JobRecord::Ptr JobRecord::Make(const NewJob& job, TopicIndex* topic,
                               uint64_t seq, absl::Time now) {
  const size_t size = sizeof(JobRecord) + job.id.size() + job.payload.size();
  JobRecord* r = new (::operator new(size)) JobRecord();
  r->id_size_ = static_cast<uint32_t>(job.id.size());
  r->payload_size_ = static_cast<uint32_t>(job.payload.size());
  std::memcpy(r->data(), job.id.data(), job.id.size());
  std::memcpy(r->data() + job.id.size(), job.payload.data(),
              job.payload.size());
  r->topic_ = topic;
  r->seq_ = seq;
  r->run_at_ = MicrosOf(job.run_at);
  r->enqueued_at_ = MicrosOf(now);
  r->ttr_ = absl::ToInt64Microseconds(job.ttr);
  r->priority_ = job.priority;
  r->max_attempts_ = job.max_attempts;
  r->state_ = job.run_at > now ? JobState::kDelayed : JobState::kReady;
  if (job.backoff != Backoff()) r->extra().backoff = job.backoff;
  if (job.expire_at != absl::InfiniteFuture()) {
    r->extra().expire_at = absl::ToUnixMicros(job.expire_at);
    r->extra().discard_expired = job.discard_expired;
  }
  if (job.unique_for > absl::ZeroDuration()) {
    r->extra().unique_for = absl::ToInt64Microseconds(job.unique_for);
  }
  if (job.keep_for > absl::ZeroDuration()) {
    r->extra().keep_for = absl::ToInt64Microseconds(job.keep_for);
    r->extra().keep_at_most = job.keep_at_most;
  }
  return Ptr(r);
}

JobRecord::Ptr JobRecord::WithPayload(absl::string_view payload) const {
  const size_t size = sizeof(JobRecord) + id_size_ + payload.size();
  JobRecord* r = new (::operator new(size)) JobRecord();
  r->run_at_ = run_at_;
  r->enqueued_at_ = enqueued_at_;
  r->ttr_ = ttr_;
  r->deadline_ = deadline_;
  r->seq_ = seq_;
  r->order_ = order_;
  r->topic_ = topic_;
  if (extra_ != nullptr) r->extra_ = std::make_unique<Extra>(*extra_);
  r->priority_ = priority_;
  r->max_attempts_ = max_attempts_;
  r->attempts_ = attempts_;
  r->state_ = state_;
  r->id_size_ = id_size_;
  r->payload_size_ = static_cast<uint32_t>(payload.size());
  std::memcpy(r->data(), data(), id_size_);
  std::memcpy(r->data() + id_size_, payload.data(), payload.size());
  return Ptr(r);
}

void JobRecord::Deleter::operator()(JobRecord* record) const {
  record->~JobRecord();
  ::operator delete(record);
}

JobRecord::Extra& JobRecord::extra() {
  if (extra_ == nullptr) extra_ = std::make_unique<Extra>();
  return *extra_;
}

Job JobRecord::ToJob() const {
  Job j;
  j.id = std::string(id());
  j.topic = topic_->name;
  j.payload = std::string(payload());
  j.state = state_;
  j.priority = priority_;
  j.attempts = attempts_;
  j.max_attempts = max_attempts_;
  j.ttr = absl::Microseconds(ttr_);
  if (extra_ != nullptr) {
    j.backoff = extra_->backoff;
    j.last_error = extra_->last_error;
    if (extra_->expire_at != kNever) {
      j.expire_at = absl::FromUnixMicros(extra_->expire_at);
      j.discard_expired = extra_->discard_expired;
    }
    j.unique_for = absl::Microseconds(extra_->unique_for);
    j.keep_for = absl::Microseconds(extra_->keep_for);
    j.keep_at_most = extra_->keep_at_most;
    j.result = extra_->result;
  }
  j.enqueued_at = TimeOf(enqueued_at_);
  j.run_at = TimeOf(run_at_);
  if (IsFinished(state_)) {
    j.finished_at = TimeOf(deadline_);
  } else {
    j.deadline = TimeOf(deadline_);
  }
  return j;
}

void JobRecord::set_last_error(absl::string_view error) {
  if (error.empty() && extra_ == nullptr) return;
  extra().last_error = std::string(error);
}

void JobRecord::Reserve(uint64_t token, int64_t deadline) {
  state_ = JobState::kReserved;
  order_ = token;
  deadline_ = deadline;
}

void JobRecord::Die(uint64_t death_seq, int64_t now_us) {
  state_ = JobState::kDead;
  order_ = death_seq;
  deadline_ = now_us;
}

void JobRecord::Finish(uint64_t done_seq, int64_t now_us,
                       absl::string_view result) {
  state_ = JobState::kDone;
  order_ = done_seq;
  deadline_ = now_us;
  extra().result = std::string(result);
}

void JobRecord::Wait(JobState state) {
  state_ = state;
  order_ = 0;
  deadline_ = kNoTime;
}

}  // namespace memory_internal
}  // namespace delayq
