// Copyright delayq authors.

#include "backends/redis/client/shared_connection.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace delayq {
namespace redis_internal {
SharedConnection::SharedConnection(std::unique_ptr<Link> link,
                                   absl::Duration timeout)
    : link_(std::move(link)),
      timeout_(absl::ToChronoMicroseconds(timeout)),
      endpoint_(link_->endpoint()) {}

SharedConnection::~SharedConnection() = default;

absl::StatusOr<std::vector<Reply>> SharedConnection::Call(
    const std::string& request, size_t count) {
  if (count == 0) return std::vector<Reply>{};
  in_flight_.fetch_add(1, std::memory_order_relaxed);
  struct Done {
    std::atomic<int>* n;
    ~Done() { n->fetch_sub(1, std::memory_order_relaxed); }
  } done{&in_flight_};

  Waiter self;
  self.count = count;
  self.deadline = std::chrono::steady_clock::now() + timeout_;
  self.replies.reserve(count);
  {
    internal::MutexLock send_lock(&send_mu_);
    {
      internal::MutexLock lock(&mu_);
      if (!failure_.ok()) return failure_;
      queue_.push_back(&self);
    }
    absl::Status sent = Send(request, self.deadline);
    if (!sent.ok()) Fail(std::move(sent));
  }
  internal::MutexLock lock(&mu_);
  while (!self.done) {
    if (!reading_) {
      ReadFor(&self);
    } else if (!self.wake.WaitUntil(&mu_, self.deadline) && !self.done) {
      // The replies before this call's did not all come in its time.
      FailLocked(TimedOut());
    }
  }
  if (!self.status.ok()) return self.status;
  return std::move(self.replies);
}

bool SharedConnection::StillOpen() {
  if (!usable()) return false;
  // An error means the server closed the connection (it restarted, or
  // dropped the client), or sent bytes that answer nothing (an error sent
  // on its own, or a stream out of step) and would be taken for the next
  // call's reply.
  absl::Status idle = link_->CheckIdle();
  if (idle.ok()) return true;
  Fail(std::move(idle));
  return false;
}

int SharedConnection::waiting() const {
  internal::MutexLock lock(&mu_);
  return static_cast<int>(queue_.size());
}

absl::Status SharedConnection::Send(
    const std::string& request,
    std::chrono::steady_clock::time_point deadline) {
  absl::Status sent = link_->Write(request, deadline);
  if (absl::IsDeadlineExceeded(sent)) return TimedOut();
  return sent;
}

void SharedConnection::ReadFor(Waiter* self) {
  reading_ = true;
  while (!self->done) {
    mu_.Unlock();
    std::vector<Reply> replies;
    absl::Status read = ReadReplies(self->deadline, &replies);
    mu_.Lock();
    Deliver(&replies, self);
    if (!read.ok()) FailLocked(std::move(read));
  }
  reading_ = false;
  if (!queue_.empty()) queue_.front()->wake.Signal();
}

absl::Status SharedConnection::ReadReplies(
    std::chrono::steady_clock::time_point deadline, std::vector<Reply>* out) {
  while (true) {
    absl::StatusOr<Reply> reply = link_->Parsed();
    if (!reply.ok()) return reply.status();
    if (*reply != nullptr) {
      out->push_back(*std::move(reply));
      continue;
    }
    if (!out->empty()) return absl::OkStatus();
    // Waits only until the call's deadline, however the replies trickle in.
    absl::Status received = link_->Receive(deadline);
    if (absl::IsDeadlineExceeded(received)) return TimedOut();
    if (!received.ok()) return received;
  }
}

void SharedConnection::Deliver(std::vector<Reply>* replies, Waiter* self) {
  for (Reply& reply : *replies) {
    // After a failure the queue is empty and late replies are dropped; a
    // reply nobody asked for otherwise means the stream is out of step.
    if (queue_.empty()) {
      if (failure_.ok()) {
        failed_.store(true, std::memory_order_release);
        failure_ = absl::InternalError(
            absl::StrCat("redis ", endpoint_, ": a reply no call asked for"));
        link_->Shutdown();
      }
      return;
    }
    Waiter* w = queue_.front();
    w->replies.push_back(std::move(reply));
    if (w->replies.size() < w->count) continue;
    queue_.pop_front();
    w->done = true;
    // Notified under the lock: once it sees `done` the waiter may return and
    // destroy its condition variable.
    if (w != self) w->wake.Signal();
  }
}

absl::Status SharedConnection::TimedOut() const {
  return absl::DeadlineExceededError(absl::StrCat(
      "redis ", endpoint_, ": reply: no answer within the timeout (",
      absl::FormatDuration(absl::FromChrono(timeout_)), ")"));
}

void SharedConnection::Fail(absl::Status status) {
  internal::MutexLock lock(&mu_);
  FailLocked(std::move(status));
}

void SharedConnection::FailLocked(absl::Status status) {
  if (failure_.ok()) {
    failure_ = std::move(status);
    failed_.store(true, std::memory_order_release);
    // Ends a read or write another caller has under way.
    link_->Shutdown();
  }
  for (Waiter* w : queue_) {
    w->status = failure_;
    w->done = true;
    w->wake.Signal();
  }
  queue_.clear();
}

}  // namespace redis_internal
}  // namespace delayq
