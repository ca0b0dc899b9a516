// Copyright delayq authors.

#include "tools/delayq/store.h"

#include <sys/stat.h>

#include <cstdlib>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "delayq/open.h"
#include "delayq/postgres_backend.h"
#include "delayq/sqlite_backend.h"
#include "tools/common/values.h"
#include "tools/delayq/background_errors.h"

namespace delayq {
namespace cli {

namespace {

// The store at `url`; when not `create`, a PostgreSQL schema that does not
// exist is NotFound rather than created (SQLite's file is checked by the
// caller).
absl::StatusOr<std::unique_ptr<Backend>> OpenStore(const std::string& url,
                                                   bool create) {
  if (create || !(absl::StartsWith(url, "postgres:") ||
                  absl::StartsWith(url, "postgresql:"))) {
    return OpenBackend(url);
  }
  absl::StatusOr<PostgresOptions> options = ParsePostgresUrl(url);
  if (!options.ok()) return options.status();
  options->create_schema = false;
  return OpenPostgresBackend(*options);
}

}  // namespace

std::string StoreUrl(const Context& ctx) {
  if (ctx.Has("store")) return ctx.Get("store");
  const char* env = std::getenv("DELAYQ_STORE");
  if (env != nullptr && *env != '\0') return env;
  return "sqlite:delayq.db";
}

absl::StatusOr<absl::Duration> PollFlag(const Context& ctx,
                                        absl::Duration fallback) {
  if (!ctx.Has("poll")) return fallback;
  absl::StatusOr<absl::Duration> d =
      ParseDurationValue("--poll", ctx.Get("poll"));
  if (!d.ok()) return d.status();
  if (*d < absl::Milliseconds(10)) {
    return absl::InvalidArgumentError("--poll must be at least 10ms");
  }
  return *d;
}

absl::StatusOr<std::unique_ptr<Scheduler>> OpenScheduler(
    const Context& ctx, bool create, absl::Duration poll_interval,
    Metrics* metrics, std::optional<absl::Duration> news_poll_interval) {
  const std::string url = StoreUrl(ctx);
  if (!create && absl::StartsWith(url, "sqlite:")) {
    absl::StatusOr<SqliteOptions> options = ParseSqliteUrl(url);
    if (!options.ok()) return options.status();
    struct stat st;
    if (stat(options->path.c_str(), &st) != 0) {
      return absl::NotFoundError(absl::StrCat(
          "no store at ", options->path,
          " (`delayq add` creates one; pick another with --store or "
          "DELAYQ_STORE)"));
    }
  }
  absl::StatusOr<std::unique_ptr<Backend>> backend = OpenStore(url, create);
  if (!backend.ok()) return backend.status();
  SchedulerOptions options;
  options.poll_interval = poll_interval;
  // One for the program's life: a scheduler's threads may report until it
  // is destroyed, and the counts carry over between schedulers.
  static BackgroundErrors* const background_errors = new BackgroundErrors();
  options.on_background_error = [](absl::string_view what,
                                   const absl::Status& error) {
    background_errors->Report(what, error);
  };
  if (news_poll_interval.has_value()) {
    options.news_poll_interval = *news_poll_interval;
  }
  if (metrics != nullptr) {
    return Scheduler::Create(metrics->Instrument(*std::move(backend)), options);
  }
  return Scheduler::Create(*std::move(backend), options);
}

}  // namespace cli
}  // namespace delayq
