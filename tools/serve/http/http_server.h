// Copyright delayq authors.
//
// HTTP/1.1 over TCP: accepts connections, reads their requests
// (http_wire.h), hands each to a handler and writes its reply. Each open
// connection has a thread (ConnectionThreads), kept while the client keeps
// the connection alive; a long-polling reserve waits on it.
//
//   auto http = HttpServer::Start({"127.0.0.1", 0}, options,
//                                 [](const HttpRequest&, HttpResponse&) {...});
//   (*http)->port();
//   (*http)->Drain();  // no new connections; answers what is in flight
//
// Requests the transport refuses itself (malformed, a body over the limit)
// are answered with the JSON error body the routes use, and the connection
// is closed.

#ifndef DELAYQ_TOOLS_SERVE_HTTP_HTTP_SERVER_H_
#define DELAYQ_TOOLS_SERVE_HTTP_HTTP_SERVER_H_

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "tools/serve/http/connection_threads.h"
#include "tools/serve/http/http_message.h"
#include "tools/serve/http/http_wire.h"
#include "tools/serve/http/listen_address.h"

namespace delayq {
namespace serve {

class HttpServer {
 public:
  struct Options {
    size_t max_body_bytes = 2 << 20;
    // An idle kept-alive connection is closed after this long.
    absl::Duration keep_alive = absl::Seconds(5);
    // A request must be all in this long after its first byte (else its
    // connection is closed), so that a client trickling bytes cannot hold
    // a thread, or a drain, for longer.
    absl::Duration request_timeout = absl::Seconds(30);
    // A reply must be all written this long after it began (else its
    // connection is closed): a client that reads slowly holds a thread no
    // longer.
    absl::Duration reply_timeout = absl::Seconds(30);
    // Header lines ("Name: value") every reply carries, the transport's
    // own refusals too.
    std::vector<std::string> headers;
    // A drain lets a request that is still arriving come in whole for
    // this long, then closes its connection (else one client that sent
    // half a request would hold the drain for `request_timeout`).
    absl::Duration drain_read_grace = absl::Seconds(1);
    int max_connections = 4096;  // more wait for a thread
    size_t thread_stack_bytes = 256 << 10;
  };
  using Handler = std::function<void(const HttpRequest&, HttpResponse&)>;

  // Listens on `address` (port 0: any free port) and accepts on a thread
  // of its own.
  static absl::StatusOr<std::unique_ptr<HttpServer>> Start(
      const ListenAddress& address, const Options& options, Handler handler);
  ~HttpServer();  // Drain()
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  int port() const { return port_; }

  // Stops accepting and closes idle connections; returns once every
  // request in flight is answered and its connection closed.
  void Drain();

 private:
  HttpServer(const Options& options, Handler handler);
  void AcceptLoop();
  void Serve(int fd);
  // Writes `response` with the headers every reply carries.
  bool Send(HttpConnection& connection, HttpResponse response,
            const Framing& framing);
  // The handler's reply, or a 500 if it throws.
  HttpResponse Answer(const HttpRequest& request);
  // What a connection is doing, for Drain(): waiting for a request (shut
  // down at once), reading one (after a grace), or answering one (waited
  // for).
  enum class Phase { kIdle, kReading, kAnswering };
  // Records `fd`'s phase; false when draining and `phase` is kIdle, so the
  // connection ends instead of waiting for a request.
  bool Enter(int fd, Phase phase);
  // Forgets `fd`, before it is closed (its number may be reused at once).
  void Leave(int fd);
  bool Draining();
  // Ends the wait for bytes of every connection in `phase`.
  void ShutDownReading(Phase phase) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Options options_;
  const Handler handler_;
  absl::Mutex drain_mu_;  // one Drain() at a time
  int listen_fd_ = -1;
  int port_ = 0;
  std::thread acceptor_;
  ConnectionThreads threads_;
  absl::Mutex mu_;
  bool draining_ ABSL_GUARDED_BY(mu_) = false;
  absl::flat_hash_map<int, Phase> phases_ ABSL_GUARDED_BY(mu_);
  int reading_ ABSL_GUARDED_BY(mu_) = 0;           // connections in kReading
  bool readers_cut_ ABSL_GUARDED_BY(mu_) = false;  // the grace is over
};

}  // namespace serve
}  // namespace delayq

#endif  // DELAYQ_TOOLS_SERVE_HTTP_HTTP_SERVER_H_
