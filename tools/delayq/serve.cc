// Copyright delayq authors.
//
// `delayq serve`: the HTTP API (and metrics and dashboard) over a store,
// for programs in any language and for operators' browsers.

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "delayq/metrics.h"
#include "delayq/redacted_url.h"
#include "delayq/scheduler.h"
#include "tools/common/values.h"
#include "tools/delayq/cli.h"
#include "tools/delayq/signals.h"
#include "tools/delayq/store.h"
#include "tools/serve/api/auth.h"
#include "tools/serve/http/listen_address.h"
#include "tools/serve/server.h"

namespace delayq {
namespace cli {
namespace {

constexpr int kExitInterrupted = 130;

absl::StatusOr<serve::ServeOptions> Options(const Context& ctx) {
  serve::ServeOptions options;
  absl::StatusOr<serve::ListenAddress> listen =
      serve::ParseListenAddress(ctx.Get("listen", "127.0.0.1:7070"));
  if (!listen.ok()) return listen.status();
  options.listen = *listen;
  if (ctx.Has("token-file")) {
    absl::StatusOr<std::string> token =
        serve::ReadTokenFile(ctx.Get("token-file"));
    if (!token.ok()) return token.status();
    options.token = *token;
  }
  if (ctx.Has("allow-host")) {
    options.allowed_hosts =
        absl::StrSplit(ctx.Get("allow-host"), ',', absl::SkipWhitespace());
  }
  if (ctx.Has("max-wait")) {
    absl::StatusOr<absl::Duration> wait =
        ParseDurationValue("--max-wait", ctx.Get("max-wait"));
    if (!wait.ok()) return wait.status();
    options.max_wait = *wait;
  }
  if (ctx.Has("max-body")) {
    absl::StatusOr<int> bytes =
        ParseIntValue("--max-body", ctx.Get("max-body"), 1024, 1 << 30);
    if (!bytes.ok()) return bytes.status();
    options.max_body_bytes = *bytes;
  }
  return options;
}

// Waits for the server to drain; a second signal quits at once.
int DrainOrQuit(serve::Server& server) {
  std::atomic<bool> drained{false};
  std::thread drain([&] {
    server.Drain();
    drained = true;
  });
  while (!drained) {
    if (WaitStopSignal(absl::Milliseconds(100)) != 0) {
      absl::FPrintF(stderr, "delayq: second signal, quitting\n");
      std::_Exit(kExitInterrupted);
    }
  }
  drain.join();
  return kExitOk;
}

int RunServe(const Context& ctx) {
  if (!ctx.args.empty()) return UsageError(ctx, "unexpected arguments");
  absl::StatusOr<serve::ServeOptions> options = Options(ctx);
  if (!options.ok()) return Fail(options.status());
  // Before any thread starts, so that only this one sees the signals.
  BlockStopSignals();
  // Declared first, so that it outlives the scheduler it watches.
  Metrics metrics;
  absl::StatusOr<absl::Duration> poll = PollFlag(ctx, absl::Seconds(1));
  if (!poll.ok()) return Fail(poll.status());
  // An explicit --poll holds for a store with news too.
  std::optional<absl::Duration> news_poll;
  if (ctx.Has("poll")) news_poll = *poll;
  absl::StatusOr<std::unique_ptr<Scheduler>> scheduler =
      OpenScheduler(ctx, /*create=*/true, *poll, &metrics, news_poll);
  if (!scheduler.ok()) return Fail(scheduler.status());
  metrics.Attach(**scheduler);
  // The timer thread promotes due jobs and ends leases, so counts and
  // events stay current while no client asks.
  if (absl::Status s = (*scheduler)->Start(); !s.ok()) return Fail(s);
  absl::StatusOr<std::unique_ptr<serve::Server>> server =
      serve::Server::Start(**scheduler, &metrics, *options);
  if (!server.ok()) return Fail(server.status());
  const std::string& host = options->listen.host;
  const std::string shown =
      host.find(':') != std::string::npos ? absl::StrCat("[", host, "]") : host;
  absl::FPrintF(stderr, "delayq: serving %s on http://%s:%d/%s\n",
                RedactedUrl(StoreUrl(ctx)), shown, (*server)->port(),
                options->token.empty() ? "" : " (bearer token required)");
  // One line on stdout, for scripts that start the server on port 0.
  absl::PrintF("listening on http://%s:%d\n", shown, (*server)->port());
  std::fflush(stdout);
  while (WaitStopSignal(absl::Hours(24)) == 0) {
  }
  absl::FPrintF(stderr, "delayq: draining\n");
  const int exit = DrainOrQuit(**server);
  (*scheduler)->Stop(absl::Seconds(5));
  return exit;
}

}  // namespace

const CommandSpec& ServeCommand() {
  static const CommandSpec* const spec = new CommandSpec{
      "serve",
      "serve [--listen HOST:PORT] [--token-file FILE]",
      "serve the HTTP API, metrics and dashboard",
      "Serves the store over HTTP: the JSON API under /v1 (described at\n"
      "/v1/openapi.yaml), Prometheus metrics at /metrics and the dashboard\n"
      "at /. It listens on 127.0.0.1:7070 unless told otherwise; listening\n"
      "on any other address needs --token-file, and every request (but the\n"
      "dashboard's files and /v1/openapi.yaml) must then carry\n"
      "\"Authorization: Bearer TOKEN\". Without a token, a request whose Host\n"
      "header is not the listening address, localhost or a name given with\n"
      "--allow-host is refused, and so is, always, a request a web page of\n"
      "another origin sends, and a body that is not application/json.\n"
      "It logs its start and stop, with the store's URL without its\n"
      "password, and the store's errors its background work meets (\"promote\n"
      "failed, retrying: ...\"); never a payload or a token.\n"
      "\n"
      "SIGINT or SIGTERM stops taking connections, answers the requests in\n"
      "flight and exits 0; a second one quits at once (exit 130).\n"
      "\n"
      "Example:\n"
      "  delayq serve --store sqlite:jobs.db --listen 127.0.0.1:7070",
      {
          {"listen", 0, FlagSpec::Arg::kRequired, "HOST:PORT",
           "where to listen (default 127.0.0.1:7070; port 0 picks one)"},
          {"token-file", 0, FlagSpec::Arg::kRequired, "FILE",
           "require the bearer token in FILE (its first line)"},
          {"allow-host", 0, FlagSpec::Arg::kRequired, "NAME[,NAME...]",
           "more names the server is reached by (a proxy's, a DNS name)"},
          {"max-wait", 0, FlagSpec::Arg::kRequired, "DURATION",
           "the longest a reserve may wait for a job (default 30s)"},
          {"max-body", 0, FlagSpec::Arg::kRequired, "BYTES",
           "the largest request body (default 2097152)"},
          {"poll", 0, FlagSpec::Arg::kRequired, "DURATION",
           "how often to look at the store for changes it did not announce "
           "(default 1s; 30s on a store that announces them)"},
      },
      /*json=*/false,
      /*takes_command=*/false,
      &RunServe,
  };
  return *spec;
}

}  // namespace cli
}  // namespace delayq
