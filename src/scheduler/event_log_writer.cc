// Copyright delayq authors.

#include "src/scheduler/event_log_writer.h"

#include <unistd.h>

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace delayq {
namespace internal {

std::string DefaultProcessName() {
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) != 0 || host[0] == '\0') {
    return absl::StrCat("pid:", getpid());
  }
  return absl::StrCat(host, ":", getpid());
}

EventLogWriter::EventLogWriter(
    Backend* backend, std::string who, size_t max_buffered,
    std::function<void(const absl::Status&)> on_error)
    : backend_(backend),
      who_(std::move(who)),
      max_buffered_(max_buffered < kFlushAt ? kFlushAt : max_buffered),
      on_error_(std::move(on_error)) {}

EventLogWriter::~EventLogWriter() { Close(); }

void EventLogWriter::Add(absl::Span<const Event> events) {
  bool flush_here = false;
  {
    absl::MutexLock lock(&mu_);
    if (unsupported_) return;
    for (const Event& e : events) {
      if (buffered_ == buffer_.size()) buffer_.emplace_back();
      AssignLoggedEvent(e, who_, &buffer_[buffered_++]);
    }
    if (buffered_ > max_buffered_) {
      // The oldest go to the spent end.
      const size_t over = buffered_ - max_buffered_;
      std::rotate(buffer_.begin(), buffer_.begin() + over,
                  buffer_.begin() + buffered_);
      buffered_ -= over;
      dropped_ += static_cast<int64_t>(over);
      unreported_ += static_cast<int64_t>(over);
    }
    flush_here = !running_ && buffered_ >= kFlushAt;
  }
  // A refused write was told to on_error.
  if (flush_here) Flush().IgnoreError();
}

absl::Status EventLogWriter::Flush() {
  absl::Status error;
  while (WriteBatch(&error) == Wrote::kBatch) {
  }
  return error;
}

EventLogWriter::Wrote EventLogWriter::WriteBatch(absl::Status* error) {
  absl::MutexLock write(&write_mu_);
  size_t n = 0;
  int64_t unreported = 0;
  {
    absl::MutexLock lock(&mu_);
    batch_.swap(buffer_);
    std::swap(n, buffered_);
    std::swap(unreported, unreported_);
  }
  const absl::Span<const LoggedEvent> batch(batch_.data(), n);
  if (unreported > 0 && on_error_) {
    on_error_(absl::ResourceExhaustedError(absl::StrCat(
        "the event log fell behind: ", unreported, " events dropped")));
  }
  if (batch.empty()) return Wrote::kNothing;
  absl::Status written = backend_->AppendEvents(batch);
  if (batch_.size() > kKeptSpent) {
    // What a burst made stays no longer than its batch.
    batch_.resize(kKeptSpent);
    batch_.shrink_to_fit();
  }
  if (written.ok()) return Wrote::kBatch;
  if (absl::IsUnimplemented(written)) {
    // A store without a log: stop buffering, and say nothing (it is not a
    // fault of this process).
    absl::MutexLock lock(&mu_);
    unsupported_ = true;
    buffer_.clear();
    buffered_ = 0;
    return Wrote::kNothing;
  }
  {
    absl::MutexLock lock(&mu_);
    dropped_ += static_cast<int64_t>(n);
  }
  if (on_error_) on_error_(written);
  if (error != nullptr) *error = written;
  // Given up on for now; what came in meanwhile waits for the next flush.
  return Wrote::kFailed;
}

void EventLogWriter::Start() {
  absl::MutexLock lock(&mu_);
  if (running_ || unsupported_) return;
  running_ = true;
  stopping_ = false;
  thread_ = std::thread([this] { Run(); });
}

void EventLogWriter::Run() {
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return stopping_ || buffered_ > 0;
      };
      mu_.Await(absl::Condition(&ready));
      if (stopping_) return;
    }
    if (WriteBatch() == Wrote::kFailed) {
      // Not a tight loop against a store that is down.
      absl::MutexLock lock(&mu_);
      auto stopping = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return stopping_;
      };
      mu_.AwaitWithTimeout(absl::Condition(&stopping), kRetryAfter);
    }
  }
}

void EventLogWriter::Close() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (thread_.joinable()) thread_.join();
  {
    absl::MutexLock lock(&mu_);
    running_ = false;
  }
  Flush().IgnoreError();  // told to on_error
}

int64_t EventLogWriter::dropped() const {
  absl::MutexLock lock(&mu_);
  return dropped_;
}

}  // namespace internal
}  // namespace delayq
