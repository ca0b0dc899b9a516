// Copyright delayq authors.

#include "tools/serve/server.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tools/serve/assets.h"
#include "tools/serve/connection_threads.h"
#include "tools/serve/http_status.h"
#include "tools/serve/router.h"
#include "tools/serve/routes.h"

namespace delayq {
namespace serve {
namespace {

// Clients reuse a kept-alive connection for this many requests.
constexpr size_t kKeepAliveRequests = 100'000;

}  // namespace

absl::StatusOr<std::unique_ptr<Server>> Server::Start(
    Scheduler& scheduler, Metrics* metrics, const ServeOptions& options) {
  if (!IsLoopback(options.listen.host) && options.token.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "listening on ", options.listen.host,
        " lets other machines in: give a bearer token (--token-file)"));
  }
  std::unique_ptr<Server> server(new Server(scheduler, metrics, options));
  const std::string& host = options.listen.host;
  if (options.listen.port == 0) {
    server->port_ = server->http_.bind_to_any_port(host);
  } else if (server->http_.bind_to_port(host, options.listen.port)) {
    server->port_ = options.listen.port;
  } else {
    server->port_ = -1;
  }
  if (server->port_ <= 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen on ", host, ":", options.listen.port,
                     " (in use, or not an address of this machine)"));
  }
  // httplib listens with a backlog of 5; a thousand clients connecting at
  // once would see their SYNs dropped and retried seconds later.
  if (listen(server->socket_, SOMAXCONN) != 0) {
    return absl::InternalError("cannot grow the listen backlog");
  }
  Server* raw = server.get();
  server->listener_ = std::thread([raw] { raw->http_.listen_after_bind(); });
  return server;
}

Server::Server(Scheduler& scheduler, Metrics* metrics,
               const ServeOptions& options)
    : scheduler_(scheduler),
      metrics_(metrics),
      options_(options),
      leases_(std::max<size_t>(1, options.lease_cache_size)),
      history_(options.history_events) {
  if (options_.history_events > 0) {
    history_listener_ = scheduler_.AddBatchListener(
        [this](absl::Span<const Event> events) { history_.RecordAll(events); });
  }
  const int max_connections = options_.max_connections;
  const size_t stack = options_.thread_stack_bytes;
  http_.new_task_queue = [max_connections, stack] {
    return new ConnectionThreads(max_connections, stack);
  };
  // As httplib's default (SO_REUSEADDR) plus TCP_NODELAY, and remember the
  // listening socket.
  http_.set_socket_options([this](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    // Accepted connections inherit it: a reply's headers and body go out
    // at once instead of the body waiting for the client's delayed ACK.
    setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof(yes));
    socket_ = sock;
  });
  http_.set_payload_max_length(options_.max_body_bytes);
  http_.set_keep_alive_max_count(kKeepAliveRequests);
  http_.set_keep_alive_timeout(
      std::max<time_t>(1, absl::ToInt64Seconds(options_.keep_alive)));
  AddRoutes();
}

Server::~Server() {
  Drain();
  if (history_listener_ >= 0) scheduler_.RemoveListener(history_listener_);
}

void Server::AddRoutes() {
  // Replies the HTTP layer makes itself (no route, a body over the limit)
  // get the same JSON error body as the routes'.
  http_.set_error_handler(httplib::Server::HandlerWithResponse(
      [limit = options_.max_body_bytes](const httplib::Request& req,
                                        httplib::Response& res) {
        if (!res.body.empty())
          return httplib::Server::HandlerResponse::Unhandled;
        std::string message;
        if (res.status == 404) {
          message = absl::StrCat("no route ", req.method, " ", req.path);
        } else if (res.status == 400) {
          message =
              "malformed HTTP request (a POST needs a Content-Length; send {} "
              "for no fields)";
        } else if (res.status == 413) {
          message = absl::StrCat("the request body is over ", limit, " bytes");
        } else {
          message = absl::StrCat("HTTP ", res.status);
        }
        const int status = res.status;
        WriteJson(
            res, status,
            StatusToJson(absl::Status(CodeForHttpStatus(status), message)));
        return httplib::Server::HandlerResponse::Handled;
      }));
  RouteContext context;
  context.scheduler = &scheduler_;
  context.max_wait = options_.max_wait;
  context.draining = &draining_;
  context.reserves_waiting = &reserves_waiting_;
  context.leases = &leases_;
  context.history = &history_;
  // The router outlives this call: its routes refer to it.
  router_ = std::make_unique<Router>(http_, options_.token);
  Router& router = *router_;
  AddLeaseRoutes(router, context);
  AddHistoryRoutes(router, context);  // before the job routes' GET /v1/jobs/ID
  AddJobRoutes(router, context);
  AddTopicRoutes(router, context);
  AddLimitRoutes(router, context);
  AddScheduleRoutes(router, context);
  AddAssetRoutes(http_);
  router.GetText(
      "/metrics", [this] { return MetricsText(); },
      "text/plain; version=0.0.4");
}

std::string Server::MetricsText() const {
  rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  const double cpu_seconds =
      static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
      (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
  return absl::StrCat(
      "# HELP delayq_http_reserves_waiting Reserve requests in progress, "
      "most of them long polls waiting for a job.\n"
      "# TYPE delayq_http_reserves_waiting gauge\n"
      "delayq_http_reserves_waiting ",
      reserves_waiting_.load(), "\n",
      "# HELP process_cpu_seconds_total User and system CPU time this "
      "process spent.\n"
      "# TYPE process_cpu_seconds_total counter\n"
      "process_cpu_seconds_total ",
      absl::StrFormat("%.6f", cpu_seconds), "\n",
      metrics_ != nullptr ? metrics_->PrometheusText() : "");
}

void Server::Drain() {
  draining_ = true;
  scheduler_.WakeReserves();  // waiting reserves see draining_ and return
  http_.stop();
  if (listener_.joinable()) listener_.join();
}

}  // namespace serve
}  // namespace delayq
