// Copyright delayq authors.
//
// The HTTP server of `delayq serve`: the JSON API under /v1, Prometheus
// metrics at /metrics and the dashboard at /, over one Scheduler.
//
//   ServeOptions options;
//   options.listen = {"127.0.0.1", 7070};
//   auto server = Server::Start(*scheduler, options);  // listening now
//   ...
//   (*server)->Drain();  // stop accepting; finish what is in flight
//
// Security: a server that listens beyond loopback must have a bearer token
// (Start() refuses otherwise); what a web page could send or read through
// its user's browser is refused (request_guard.h); request bodies, their
// nesting and reserve waits are bounded; nothing is logged, so neither
// payloads nor store passwords are.

#ifndef DELAYQ_TOOLS_SERVE_SERVER_H_
#define DELAYQ_TOOLS_SERVE_SERVER_H_

#include <atomic>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "delayq/metrics.h"
#include "delayq/scheduler.h"
#include "tools/serve/api/lease_cache.h"
#include "tools/serve/api/router.h"
#include "tools/serve/http/http_server.h"
#include "tools/serve/http/listen_address.h"
#include "tools/serve/http/request_guard.h"
#include "tools/serve/request_metrics.h"

namespace delayq {
namespace serve {

struct ServeOptions {
  ListenAddress listen = {"127.0.0.1", 7070};
  // When not empty, every request but the dashboard's files must carry
  // "Authorization: Bearer <token>". Required beyond loopback.
  std::string token;
  // Names other than the listening address that clients reach the server
  // by (a DNS name, a proxy's); without a token, a request whose Host
  // header names none of them, nor the listening address, is refused
  // (request_guard.h).
  std::vector<std::string> allowed_hosts;
  // Larger request bodies are refused with 413 (a 1 MiB payload in base64
  // with its options fits).
  size_t max_body_bytes = 2 << 20;
  // A reserve waits at most this long, whatever it asks for.
  absl::Duration max_wait = absl::Seconds(30);
  // Connections served at once (each has a thread while it is open); more
  // wait in the listen queue.
  int max_connections = 4096;
  size_t thread_stack_bytes = 256 << 10;
  // An idle kept-alive connection is closed after this long.
  absl::Duration keep_alive = absl::Seconds(5);
  // Leases remembered so that finishing one needs no read of the job (see
  // LeaseCache); about 300 bytes each.
  size_t lease_cache_size = 100'000;
};

class Server {
 public:
  // Binds and starts serving on a thread of its own. `scheduler` and
  // `metrics` (attached to it, or null for no /metrics) must outlive the
  // server.
  static absl::StatusOr<std::unique_ptr<Server>> Start(
      Scheduler& scheduler, Metrics* metrics, const ServeOptions& options);

  ~Server();  // Drain()
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // The port it listens on (the chosen one when asked for port 0).
  int port() const { return http_->port(); }

  // Stops accepting connections and returns when the requests in flight
  // have been answered and their connections closed. Reserves waiting for
  // a job, and those asked from now on, return at once.
  void Drain();

 private:
  Server(Scheduler& scheduler, Metrics* metrics, const ServeOptions& options);
  void AddRoutes();
  std::string MetricsText() const;

  Scheduler& scheduler_;
  Metrics* const metrics_;
  const ServeOptions options_;
  const RequestGuard guard_;
  Router router_;
  RequestMetrics requests_;
  std::atomic<bool> draining_{false};
  std::atomic<int> reserves_waiting_{0};
  LeaseCache leases_;
  // Last: destroyed (drained) first, while what its requests use is there.
  std::unique_ptr<HttpServer> http_;
};

}  // namespace serve
}  // namespace delayq

#endif  // DELAYQ_TOOLS_SERVE_SERVER_H_
