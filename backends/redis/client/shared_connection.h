// Copyright delayq authors.
//
// shared_connection.h — one Redis connection that many threads use at once.
// Private to the Redis backend.
//
// A call writes its commands at once and queues itself for their replies.
// Redis answers a connection's commands in the order they came, so the
// replies are handed out in the order the calls were queued. One waiting
// caller at a time reads the socket for everyone: it keeps the replies that
// are its own and hands the others to their callers; when its own are in, it
// passes the reading on to the next caller still waiting.
//
// Why: on a small machine the server's cost per call is mostly the system
// calls and the wake-up of one blocked client thread per reply. Calls that
// share a connection reach the server together and leave it in one write,
// so that cost is paid once for several calls (bench/README.md has the
// numbers).
//
// A connection that fails (a write or read error, a call whose replies are
// not all in within the timeout, a reply that does not parse) fails every
// call queued on it with that error and takes no more calls; the pool opens
// a new one.

#ifndef DELAYQ_BACKENDS_REDIS_CLIENT_SHARED_CONNECTION_H_
#define DELAYQ_BACKENDS_REDIS_CLIENT_SHARED_CONNECTION_H_

#include <atomic>
#include <chrono>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "backends/redis/client/link.h"
#include "src/common/mutex.h"

namespace delayq {
namespace redis_internal {

class SharedConnection {
 public:
  // Takes `link`, a connection ready for calls. `timeout` bounds each call
  // from its queueing to its last reply.
  SharedConnection(std::unique_ptr<Link> link, absl::Duration timeout);
  ~SharedConnection();
  SharedConnection(const SharedConnection&) = delete;
  // The server it is connected to, as messages name it.
  const std::string& endpoint() const { return link_->endpoint(); }
  SharedConnection& operator=(const SharedConnection&) = delete;

  // Writes `count` commands, encoded in RESP in `request`, and returns their
  // `count` replies in order (error replies among them). A transport failure
  // fails the whole call, and every other call queued on the connection:
  // Unavailable (closed, reset), DeadlineExceeded (no answer, or no room to
  // write, within the command timeout; whether the commands ran is then
  // unknown), Internal (a reply that does not parse, or bytes no call asked
  // for) or ResourceExhausted (no memory for a reply).
  absl::StatusOr<std::vector<Reply>> Call(const std::string& request,
                                          size_t count);

  // False once the connection has failed; it then fails every call.
  bool usable() const { return !failed_.load(std::memory_order_acquire); }

  // Fails the connection: every call queued on it ends with `status`, and
  // so does every later one. For a server that is no longer what the pool
  // wants (a primary demoted to a replica), so the pool opens another.
  void Fail(absl::Status status);

  // Marks a call about to be made (by the pool, before it hands the
  // connection out, so that in_flight() counts it from then on) and its end.
  void AddUser() { in_flight_.fetch_add(1, std::memory_order_relaxed); }
  void RemoveUser() { in_flight_.fetch_sub(1, std::memory_order_relaxed); }

  // For a connection with no user (in_flight() == 0, and none can start
  // meanwhile), which would notice nothing: false, and the connection
  // failed, when the server has closed it (it restarted, or dropped the
  // client) or sent bytes no call asked for. Otherwise usable(). One
  // non-blocking system call.
  bool StillOpen();

  // Calls whose commands are written (or being written) and whose replies
  // are not all in.
  int waiting() const;
  // Calls under way (inside Call()) plus users the pool handed the
  // connection to: 0 means nobody is using it.
  int in_flight() const { return in_flight_.load(std::memory_order_relaxed); }

 private:
  // A call waiting for its replies.
  struct Waiter {
    size_t count = 0;
    std::chrono::steady_clock::time_point deadline;
    std::vector<Reply> replies;
    absl::Status status;
    bool done = false;
    internal::CondVar wake;
  };

  absl::Status Send(const std::string& request,
                    std::chrono::steady_clock::time_point deadline);
  // Reads the socket and hands out replies until `self` is done; called and
  // returning with mu_ held, and releasing it while reading.
  void ReadFor(Waiter* self) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Reads at least one reply, and every further one already received,
  // waiting for bytes until `deadline` at most.
  absl::Status ReadReplies(std::chrono::steady_clock::time_point deadline,
                           std::vector<Reply>* out);
  void Deliver(std::vector<Reply>* replies, Waiter* self)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void FailLocked(absl::Status status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status TimedOut() const;

  const std::unique_ptr<Link> link_;
  const std::chrono::steady_clock::duration timeout_;
  const std::string& endpoint_;  // link_'s
  std::atomic<bool> failed_{false};
  std::atomic<int> in_flight_{0};
  // Held while writing, so that calls' bytes do not interleave and the queue
  // is in the order the server sees the commands.
  internal::Mutex send_mu_;
  mutable internal::Mutex mu_;
  std::deque<Waiter*> queue_ ABSL_GUARDED_BY(mu_);
  bool reading_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status failure_ ABSL_GUARDED_BY(mu_);
};

}  // namespace redis_internal
}  // namespace delayq

#endif  // DELAYQ_BACKENDS_REDIS_CLIENT_SHARED_CONNECTION_H_
