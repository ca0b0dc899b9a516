// Copyright delayq authors.
//
// The flags that describe a job, for every command that enqueues one
// (`add`, `batch open`).

#include "tools/delayq/job_flags.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "delayq/scheduler.h"
#include "tools/common/text.h"
#include "tools/common/values.h"
#include "tools/delayq/store.h"

namespace delayq {
namespace cli {
namespace {

// Stdin, byte for byte, but no more than `most` + 1 bytes: enough for the
// scheduler to refuse a payload over its limit without reading all of an
// endless or huge input first.
absl::StatusOr<std::string> ReadStdin(size_t most) {
  std::string data;
  char buffer[1 << 16];
  while (data.size() <= most) {
    const ssize_t n = read(STDIN_FILENO, buffer,
                           std::min(sizeof(buffer), most + 1 - data.size()));
    if (n == 0) return data;
    if (n < 0) {
      if (errno == EINTR) continue;
      return absl::UnavailableError(absl::StrCat(
          "cannot read the payload from stdin: ", std::strerror(errno)));
    }
    data.append(buffer, static_cast<size_t>(n));
  }
  return data;
}

}  // namespace

absl::Status ReadJobOptions(const Context& ctx, JobOptions& options) {
  if (ctx.Has("delay")) {
    absl::StatusOr<absl::Duration> d =
        ParseDurationValue("--delay", ctx.Get("delay"));
    if (!d.ok()) return d.status();
    options.delay = *d;
  }
  if (ctx.Has("at")) {
    absl::StatusOr<absl::Time> t = ParseTimeValue("--at", ctx.Get("at"));
    if (!t.ok()) return t.status();
    options.run_at = *t;
  }
  if (ctx.Has("ttr")) {
    absl::StatusOr<absl::Duration> d =
        ParseDurationValue("--ttr", ctx.Get("ttr"));
    if (!d.ok()) return d.status();
    if (*d <= absl::ZeroDuration()) {
      return absl::InvalidArgumentError("--ttr must be positive");
    }
    options.ttr = *d;
  }
  if (ctx.Has("priority")) {
    absl::StatusOr<int> p =
        ParseIntValue("--priority", ctx.Get("priority"), INT_MIN, INT_MAX);
    if (!p.ok()) return p.status();
    options.priority = *p;
  }
  if (ctx.Has("max-attempts")) {
    absl::StatusOr<int> n =
        ParseIntValue("--max-attempts", ctx.Get("max-attempts"), 1, INT_MAX);
    if (!n.ok()) return n.status();
    options.max_attempts = *n;
  }
  if (ctx.Has("backoff")) {
    absl::StatusOr<Backoff> b = ParseBackoffValue(ctx.Get("backoff"));
    if (!b.ok()) return b.status();
    options.backoff = *b;
  }
  if (ctx.Has("id")) {
    options.id = ctx.Get("id");
    if (options.id.empty()) {
      return absl::InvalidArgumentError("--id must not be empty");
    }
  }
  for (const auto& [flag, value] :
       {std::pair{"expire-in", &options.expire_after},
        std::pair{"unique-for", &options.unique_for},
        std::pair{"keep-for", &options.keep_for}}) {
    if (!ctx.Has(flag)) continue;
    absl::StatusOr<absl::Duration> d =
        ParseDurationValue(absl::StrCat("--", flag), ctx.Get(flag));
    if (!d.ok()) return d.status();
    *value = *d;
  }
  if (ctx.Has("keep-at-most")) {
    if (!ctx.Has("keep-for")) {
      return absl::InvalidArgumentError("--keep-at-most needs --keep-for");
    }
    absl::StatusOr<int> n = ParseIntValue(
        "--keep-at-most", ctx.Get("keep-at-most"), 1, kMaxDonePerTopic);
    if (!n.ok()) return n.status();
    options.keep_at_most = *n;
  }
  if (ctx.Has("discard-expired")) {
    if (!ctx.Has("expire-in")) {
      return absl::InvalidArgumentError("--discard-expired needs --expire-in");
    }
    options.discard_expired = true;
  }
  if (ctx.Has("after")) {
    std::vector<std::string> ids = absl::StrSplit(ctx.Get("after"), ',');
    options.after = std::move(ids);
  }
  if (ctx.Has("on-dependency-failure")) {
    if (!ctx.Has("after")) {
      return absl::InvalidArgumentError(
          "--on-dependency-failure needs --after");
    }
    if (!ParseDependencyFailure(ctx.Get("on-dependency-failure"),
                                &options.on_dependency_failure)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "bad --on-dependency-failure: '", ctx.Get("on-dependency-failure"),
          "' (fail, cancel or run)"));
    }
  }
  if (ctx.Has("batch")) {
    options.batch = ctx.Get("batch");
    if (options.batch.empty()) {
      return absl::InvalidArgumentError("--batch must not be empty");
    }
  }
  if (ctx.Has("replace")) {
    if (options.id.empty()) {
      return absl::InvalidArgumentError("--replace needs --id");
    }
    options.replace = true;
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadPayload(const Context& ctx, size_t index) {
  if (ctx.args.size() <= index) return std::string();
  if (ctx.args[index] != "-") return ctx.args[index];
  return ReadStdin(SchedulerOptions().max_payload_bytes);
}

int AddOneJob(const Context& ctx, size_t topic_index, const StoreJob& store) {
  if (ctx.args.size() <= topic_index) return UsageError(ctx, "missing TOPIC");
  if (ctx.args.size() > topic_index + 2) {
    return UsageError(
        ctx, absl::StrCat("unexpected argument '", ctx.args[topic_index + 2],
                          "' (quote a payload with spaces)"));
  }
  if (ctx.Has("delay") && ctx.Has("at")) {
    return UsageError(ctx, "give --delay or --at, not both");
  }
  JobOptions options;
  if (absl::Status s = ReadJobOptions(ctx, options); !s.ok()) return Fail(s);
  absl::StatusOr<std::string> payload = ReadPayload(ctx, topic_index + 1);
  if (!payload.ok()) return Fail(payload.status());
  absl::StatusOr<std::unique_ptr<Scheduler>> scheduler =
      OpenScheduler(ctx, /*create=*/true);
  if (!scheduler.ok()) return Fail(scheduler.status());
  absl::StatusOr<std::string> id =
      store(**scheduler, ctx.args[topic_index], *payload, options);
  if (!id.ok()) return Fail(id.status());
  if (ctx.json()) {
    absl::PrintF("{\"id\":%s}\n", JsonQuote(*id));
  } else {
    absl::PrintF("%s\n", *id);
  }
  return kExitOk;
}

std::vector<FlagSpec> JobFlags() {
  return {
      {"delay", 0, FlagSpec::Arg::kRequired, "DURATION",
       "run this long from now (e.g. 90s, 30m, 1h30m)"},
      {"at", 0, FlagSpec::Arg::kRequired, "TIME",
       "run at this RFC 3339 time (a past time means now)"},
      {"ttr", 0, FlagSpec::Arg::kRequired, "DURATION",
       "time to run: a worker's lease on the job (default 1m)"},
      {"priority", 0, FlagSpec::Arg::kRequired, "N",
       "lower runs first (default 0)"},
      {"id", 0, FlagSpec::Arg::kRequired, "ID",
       "the job's id (default: generated); must not be in use"},
      {"replace", 0, FlagSpec::Arg::kNone, "",
       "with --id: when a delayed or ready job has the id, give it this "
       "payload and due time instead (debounce)"},
      {"expire-in", 0, FlagSpec::Arg::kRequired, "DURATION",
       "drop the job if no worker has taken it this long after now: "
       "it goes dead with the error 'expired'"},
      {"discard-expired", 0, FlagSpec::Arg::kNone, "",
       "with --expire-in: delete the expired job instead of keeping it "
       "dead"},
      {"unique-for", 0, FlagSpec::Arg::kRequired, "DURATION",
       "with --id: keep the id taken this long after the job is done or "
       "cancelled, so adding it again within that time fails"},
      {"keep-for", 0, FlagSpec::Arg::kRequired, "DURATION",
       "once done, keep the job (with its result) this long: `get` and "
       "`list --state done` show it, `wait` returns it"},
      {"keep-at-most", 0, FlagSpec::Arg::kRequired, "N",
       "with --keep-for: the topic then keeps at most N done jobs "
       "(default and most: 10000)"},
      {"after", 0, FlagSpec::Arg::kRequired, "ID[,ID...]",
       "wait until these jobs are done (acknowledged); each must be "
       "stored already. Not on a Redis store"},
      {"on-dependency-failure", 0, FlagSpec::Arg::kRequired, "POLICY",
       "with --after, when one of those jobs dies or is cancelled: fail "
       "(this job goes dead, the default), cancel (it is deleted) or "
       "run (it runs anyway)"},
      {"max-attempts", 0, FlagSpec::Arg::kRequired, "N",
       "tries before the job is dead (default 3)"},
      {"backoff", 0, FlagSpec::Arg::kRequired, "SPEC",
       "wait before a retry: fixed:10s or exp:BASE[:MAX] (default "
       "exp:1s:10m)"},
      {"batch", 0, FlagSpec::Arg::kRequired, "ID",
       "join this open batch (`delayq batch open`): its completion job "
       "runs once every job of it has finished. Not on a Redis store"},
  };
}

}  // namespace cli
}  // namespace delayq
