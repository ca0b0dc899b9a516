// Copyright delayq authors.

#include "tools/serve/server.h"

#include <sys/resource.h>

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tools/serve/api/router.h"
#include "tools/serve/api/routes.h"
#include "tools/serve/assets.h"

namespace delayq {
namespace serve {

absl::StatusOr<std::unique_ptr<Server>> Server::Start(
    Scheduler& scheduler, Metrics* metrics, const ServeOptions& options) {
  if (!IsLoopback(options.listen.host) && options.token.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "listening on ", options.listen.host,
        " lets other machines in: give a bearer token (--token-file)"));
  }
  std::unique_ptr<Server> server(new Server(scheduler, metrics, options));
  HttpServer::Options http;
  http.max_body_bytes = options.max_body_bytes;
  http.keep_alive = options.keep_alive;
  http.max_connections = options.max_connections;
  http.thread_stack_bytes = options.thread_stack_bytes;
  http.headers = RequestGuard::SecurityHeaders();
  const RequestGuard& guard = server->guard_;
  const Router& router = server->router_;
  absl::StatusOr<std::unique_ptr<HttpServer>> started = HttpServer::Start(
      options.listen, http,
      [&guard, &router](const HttpRequest& request, HttpResponse& response) {
        if (guard.Admit(request, response)) router.Handle(request, response);
      });
  if (!started.ok()) return started.status();
  server->http_ = *std::move(started);
  return server;
}

Server::Server(Scheduler& scheduler, Metrics* metrics,
               const ServeOptions& options)
    : scheduler_(scheduler),
      metrics_(metrics),
      options_(options),
      guard_(options.listen.host, options.allowed_hosts,
             /*check_host=*/options.token.empty()),
      router_(options.token),
      leases_(std::max<size_t>(1, options.lease_cache_size)) {
  AddRoutes();
}

Server::~Server() { Drain(); }

void Server::AddRoutes() {
  RouteContext context;
  context.scheduler = &scheduler_;
  context.max_wait = options_.max_wait;
  context.draining = &draining_;
  context.reserves_waiting = &reserves_waiting_;
  context.leases = &leases_;
  AddLeaseRoutes(router_, context);
  AddHistoryRoutes(router_, context);  // before the job routes' GET /v1/jobs/ID
  AddJobRoutes(router_, context);
  AddTopicRoutes(router_, context);
  AddCountRoutes(router_, context);
  AddLimitRoutes(router_, context);
  AddScheduleRoutes(router_, context);
  AddBatchRoutes(router_, context);
  AddWorkerRoutes(router_, context);
  AddAssetRoutes(router_);
  router_.GetText(
      "/metrics", [this] { return MetricsText(); },
      "text/plain; version=0.0.4");
  router_.SetObserver([this](absl::string_view route, absl::string_view method,
                             int status, absl::Duration took) {
    requests_.Observe(route, method, status, took);
  });
}

std::string Server::MetricsText() const {
  rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  const double cpu_seconds =
      static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
      (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
  std::string requests;
  requests_.Render(&requests);
  return absl::StrCat(
      requests,
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
  if (http_ != nullptr) http_->Drain();
}

}  // namespace serve
}  // namespace delayq
