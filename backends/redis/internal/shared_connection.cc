// Copyright delayq authors.

#include "backends/redis/internal/shared_connection.h"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"

namespace delayq {
namespace redis_internal {
namespace {

// The status for a failed send() or recv() (`n` its result, `errno` its
// error): a socket timeout is DeadlineExceeded, the rest Unavailable.
absl::Status SocketStatus(absl::string_view endpoint, absl::string_view what,
                          ssize_t n, int error) {
  if (n == 0) {
    return absl::UnavailableError(
        absl::StrCat("redis ", endpoint, ": ", what, ": connection closed"));
  }
  if (error == EAGAIN || error == EWOULDBLOCK) {
    return absl::DeadlineExceededError(
        absl::StrCat("redis ", endpoint, ": ", what,
                     ": no answer within the timeout (", strerror(error), ")"));
  }
  return absl::UnavailableError(
      absl::StrCat("redis ", endpoint, ": ", what, ": ", strerror(error)));
}

}  // namespace

SharedConnection::SharedConnection(redisContext* context,
                                   absl::Duration timeout, std::string endpoint)
    : context_(context),
      timeout_(absl::ToChronoMicroseconds(timeout)),
      endpoint_(std::move(endpoint)) {}

SharedConnection::~SharedConnection() { redisFree(context_); }

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
    absl::Status sent = Send(request);
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
  char byte;
  const ssize_t n = recv(context_->fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
    return true;  // nothing to read: the healthy case
  }
  if (n > 0) {
    // With no call under way every reply has been read: these bytes answer
    // nothing (an error the server sent on its own, or a stream out of
    // step), and would be taken for the next call's reply.
    Fail(absl::InternalError(absl::StrCat(
        "redis ", endpoint_, ": the server sent bytes no call asked for")));
  } else {
    Fail(SocketStatus(endpoint_, "idle connection", n, errno));
  }
  return false;
}

int SharedConnection::waiting() const {
  internal::MutexLock lock(&mu_);
  return static_cast<int>(queue_.size());
}

// The commands are written here, not by hiredis, so that send() can say
// MSG_NOSIGNAL: a server that went away cannot raise SIGPIPE.
absl::Status SharedConnection::Send(const std::string& request) {
  size_t sent = 0;
  while (sent < request.size()) {
    const ssize_t n = send(context_->fd, request.data() + sent,
                           request.size() - sent, MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      return SocketStatus(endpoint_, "send", n, errno);
    }
  }
  return absl::OkStatus();
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
  redisReader* reader = context_->reader;
  while (true) {
    void* raw = nullptr;
    if (redisReaderGetReply(reader, &raw) != REDIS_OK) {
      return absl::InternalError(absl::StrCat(
          "redis ", endpoint_, ": reply does not parse: ", reader->errstr));
    }
    if (raw != nullptr) {
      out->emplace_back(static_cast<redisReply*>(raw));
      continue;
    }
    if (!out->empty()) return absl::OkStatus();
    // Waits only until the call's deadline, however the replies trickle in.
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return TimedOut();
    pollfd readable{context_->fd, POLLIN, 0};
    const int ready = poll(&readable, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) return TimedOut();
    char buf[16 * 1024];
    const ssize_t n = recv(context_->fd, buf, sizeof(buf), 0);
    if (n > 0) {
      if (redisReaderFeed(reader, buf, static_cast<size_t>(n)) != REDIS_OK) {
        return absl::ResourceExhaustedError(
            absl::StrCat("redis ", endpoint_, ": reply: ", reader->errstr));
      }
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      return SocketStatus(endpoint_, "reply", n, errno);
    }
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
        shutdown(context_->fd, SHUT_RDWR);
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
    shutdown(context_->fd, SHUT_RDWR);
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
