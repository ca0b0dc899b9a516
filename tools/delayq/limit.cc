// Copyright delayq authors.
//
// delayq limit TOPIC: limit how fast, and how many at once, every worker
// takes a topic's jobs, or clear the limit.

#include <climits>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "delayq/scheduler.h"
#include "tools/common/values.h"
#include "tools/delayq/cli.h"
#include "tools/delayq/store.h"

namespace delayq {
namespace cli {
namespace {

// "50/s", "100/m", "1000/h", "3/10s": N reservations per period.
absl::Status ParseRate(absl::string_view text, TopicLimit& limit) {
  const std::vector<absl::string_view> parts = absl::StrSplit(text, '/');
  auto bad = [&] {
    return absl::InvalidArgumentError(absl::StrCat(
        "bad --rate '", text, "' (write N/PERIOD, like 50/s, 100/m or 3/10s)"));
  };
  if (parts.size() != 2 || !absl::SimpleAtoi(parts[0], &limit.rate) ||
      limit.rate < 1) {
    return bad();
  }
  if (parts[1] == "s") {
    limit.period = absl::Seconds(1);
  } else if (parts[1] == "m") {
    limit.period = absl::Minutes(1);
  } else if (parts[1] == "h") {
    limit.period = absl::Hours(1);
  } else if (!absl::ParseDuration(std::string(parts[1]), &limit.period) ||
             limit.period <= absl::ZeroDuration()) {
    return bad();
  }
  return absl::OkStatus();
}

absl::StatusOr<TopicLimit> ReadLimit(const Context& ctx) {
  TopicLimit limit;
  if (ctx.Has("rate")) {
    if (absl::Status s = ParseRate(ctx.Get("rate"), limit); !s.ok()) return s;
  }
  if (ctx.Has("burst")) {
    absl::StatusOr<int> n =
        ParseIntValue("--burst", ctx.Get("burst"), 1, INT_MAX);
    if (!n.ok()) return n.status();
    limit.burst = *n;
  }
  if (ctx.Has("concurrency")) {
    absl::StatusOr<int> n =
        ParseIntValue("--concurrency", ctx.Get("concurrency"), 1, INT_MAX);
    if (!n.ok()) return n.status();
    limit.concurrency = *n;
  }
  return limit;
}

int RunLimit(const Context& ctx) {
  if (ctx.args.empty()) return UsageError(ctx, "missing TOPIC");
  const bool setting =
      ctx.Has("rate") || ctx.Has("concurrency") || ctx.Has("burst");
  if (ctx.Has("clear") == setting) {
    return UsageError(
        ctx, "give --rate and/or --concurrency to set a limit, or --clear");
  }
  if (ctx.Has("burst") && !ctx.Has("rate")) {
    return UsageError(ctx, "--burst needs --rate");
  }
  absl::StatusOr<TopicLimit> limit = ReadLimit(ctx);
  if (!limit.ok()) return Fail(limit.status());
  absl::StatusOr<std::unique_ptr<Scheduler>> scheduler =
      OpenScheduler(ctx, /*create=*/false);
  if (!scheduler.ok()) return Fail(scheduler.status());
  for (const std::string& topic : ctx.args) {
    if (ctx.Has("clear")) {
      if (absl::Status s = (*scheduler)->ClearLimit(topic); !s.ok()) {
        return Fail(s);
      }
      absl::PrintF("no limit on %s\n", topic);
    } else {
      if (absl::Status s = (*scheduler)->SetLimit(topic, *limit); !s.ok()) {
        return Fail(s);
      }
      absl::PrintF("limited %s: %s\n", topic, LimitText(*limit));
    }
  }
  return kExitOk;
}

}  // namespace

const CommandSpec& LimitCommand() {
  static const CommandSpec* const spec = new CommandSpec{
      "limit",
      "limit TOPIC... (--rate N/PERIOD [--burst N] | --concurrency N | "
      "--clear)",
      "limit how fast and how many at once workers take a topic's jobs",
      "Limits every process that shares the store: at most N reservations\n"
      "per PERIOD (spaced evenly; --burst lets that many go at once after a\n"
      "quiet spell) and at most --concurrency jobs reserved at one time.\n"
      "Kept in the store and checked inside each reservation; a worker the\n"
      "limit holds back sleeps until the limit lets it go. Setting a limit\n"
      "again replaces it; --clear removes it. `stats` shows limits.\n"
      "\n"
      "Examples:\n"
      "  delayq limit payments --rate 50/s --concurrency 10\n"
      "  delayq limit reports --rate 3/10s\n"
      "  delayq limit payments --clear",
      {
          {"rate", 0, FlagSpec::Arg::kRequired, "N/PERIOD",
           "at most N reservations per PERIOD (s, m, h or a duration)"},
          {"burst", 0, FlagSpec::Arg::kRequired, "N",
           "with --rate: how many may go at once (default 1)"},
          {"concurrency", 0, FlagSpec::Arg::kRequired, "N",
           "at most N jobs reserved at one time"},
          {"clear", 0, FlagSpec::Arg::kNone, "", "remove the limit"},
      },
      /*json=*/false,
      /*takes_command=*/false,
      &RunLimit,
  };
  return *spec;
}

}  // namespace cli
}  // namespace delayq
