// Copyright delayq authors.
//
// BareReplyServer — the least any HTTP server over TCP loopback can cost a
// request: a child process that reads each request (headers and a
// Content-Length body) on a kept-alive connection and writes one fixed JSON
// reply, a thread per connection, nothing else. `GET /cpu` answers with the
// CPU seconds the child has used. serve_bench measures `delayq serve`
// against it, so that what the HTTP layer costs over the kernel's own work
// is visible.

#ifndef DELAYQ_BENCH_SERVE_BARE_REPLY_SERVER_H_
#define DELAYQ_BENCH_SERVE_BARE_REPLY_SERVER_H_

#include <sys/types.h>

#include "absl/status/statusor.h"

namespace delayq {
namespace bench {

class BareReplyServer {
 public:
  // Forks the server, listening on a free loopback port. Call it before the
  // process starts threads (it forks).
  static absl::StatusOr<BareReplyServer> Fork();

  BareReplyServer(BareReplyServer&& other) noexcept;
  BareReplyServer& operator=(BareReplyServer&&) = delete;
  // Stops the child.
  ~BareReplyServer();

  int port() const { return port_; }

 private:
  BareReplyServer(pid_t pid, int port) : pid_(pid), port_(port) {}

  pid_t pid_;
  int port_;
};

}  // namespace bench
}  // namespace delayq

#endif  // DELAYQ_BENCH_SERVE_BARE_REPLY_SERVER_H_
