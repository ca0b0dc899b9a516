// Copyright delayq authors.
//
// schedule add | rm | list: periodic schedules, kept in the store for
// every process that runs a scheduler on it (Scheduler::Schedule()).

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "delayq/clock.h"
#include "delayq/scheduler.h"
#include "tools/common/values.h"
#include "tools/delayq/cli.h"
#include "tools/delayq/store.h"
#include "tools/delayq/table.h"

namespace delayq {
namespace cli {
namespace {

// "2026-11-26 03:00:00 CET (in 19h)", or "never".
std::string NextRunText(absl::Time next, absl::Time now) {
  if (next == absl::InfiniteFuture()) return "never";
  return absl::StrCat(LocalText(next), " (", RelativeText(next, now), ")");
}

std::string NextRunJson(absl::Time next) {
  return next == absl::InfiniteFuture()
             ? "null"
             : absl::StrCat("\"", UtcText(next), "\"");
}

// The options of `schedule add` from its flags.
absl::StatusOr<ScheduleOptions> OptionsOf(const Context& ctx) {
  ScheduleOptions options;
  options.time_zone = ctx.Get("tz", "UTC");
  if (ctx.Has("missed") &&
      !ParseMissedPolicy(ctx.Get("missed"), &options.missed)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "bad --missed '", ctx.Get("missed"),
        "' (skip, once, or all:N with N from 1 to ", kMaxMissedRuns, ")"));
  }
  if (ctx.Has("jitter")) {
    absl::StatusOr<absl::Duration> jitter =
        ParseDurationValue("--jitter", ctx.Get("jitter"));
    if (!jitter.ok()) return jitter.status();
    options.jitter = *jitter;
  }
  return options;
}

int RunAdd(const Context& ctx) {
  if (ctx.args.size() < 3) {
    return UsageError(ctx,
                      ctx.args.size() < 2 ? "missing NAME" : "missing SPEC");
  }
  if (ctx.args.size() > 3) {
    return UsageError(ctx,
                      absl::StrCat("unexpected argument '", ctx.args[3],
                                   "' (quote a cron SPEC: \"0 3 * * *\")"));
  }
  if (!ctx.Has("topic")) return UsageError(ctx, "add needs --topic TOPIC");
  absl::StatusOr<ScheduleOptions> options = OptionsOf(ctx);
  if (!options.ok()) return Fail(options.status());
  absl::StatusOr<std::unique_ptr<Scheduler>> scheduler =
      OpenScheduler(ctx, /*create=*/true);
  if (!scheduler.ok()) return Fail(scheduler.status());
  const std::string& name = ctx.args[1];
  absl::Status s = (*scheduler)
                       ->Schedule(name, ctx.args[2], ctx.Get("topic"),
                                  ctx.Get("payload"), *options);
  if (!s.ok()) return Fail(s);
  absl::StatusOr<std::vector<ScheduleInfo>> all = (*scheduler)->Schedules();
  if (!all.ok()) return Fail(all.status());
  absl::Time next = absl::InfiniteFuture();
  for (const ScheduleInfo& info : *all) {
    if (info.record.name == name) next = info.next_run;
  }
  if (ctx.json()) {
    absl::PrintF("{%s,\"next_run\":%s}\n", JsonText("name", name),
                 NextRunJson(next));
  } else {
    absl::PrintF("scheduled %s, next run %s\n", name,
                 NextRunText(next, RealClock().Now()));
  }
  return kExitOk;
}

int RunRemove(const Context& ctx) {
  if (ctx.args.size() < 2) return UsageError(ctx, "missing NAME");
  absl::StatusOr<std::unique_ptr<Scheduler>> scheduler =
      OpenScheduler(ctx, /*create=*/false);
  if (!scheduler.ok()) return Fail(scheduler.status());
  int exit = kExitOk;
  for (size_t i = 1; i < ctx.args.size(); ++i) {
    if (absl::Status s = (*scheduler)->Unschedule(ctx.args[i]); !s.ok()) {
      exit = Fail(s);
    } else if (!ctx.json()) {
      absl::PrintF("removed %s\n", ctx.args[i]);
    }
  }
  if (ctx.json() && exit == kExitOk) absl::PrintF("{\"removed\":true}\n");
  return exit;
}

std::string ScheduleJson(const ScheduleInfo& info) {
  const ScheduleRecord& r = info.record;
  return absl::StrCat(
      "{", JsonText("name", r.name), ",", JsonText("spec", r.spec), ",",
      JsonText("time_zone", r.options.time_zone), ",",
      JsonText("topic", r.topic), ",\"missed\":\"",
      MissedPolicyName(r.options.missed),
      "\",\"jitter_ms\":", absl::ToInt64Milliseconds(r.options.jitter),
      ",\"next_run\":", NextRunJson(info.next_run), ",",
      JsonText("payload", r.payload), "}");
}

int RunList(const Context& ctx) {
  if (ctx.args.size() > 1) {
    return UsageError(ctx,
                      absl::StrCat("unexpected argument '", ctx.args[1], "'"));
  }
  absl::StatusOr<std::unique_ptr<Scheduler>> scheduler =
      OpenScheduler(ctx, /*create=*/false);
  if (!scheduler.ok()) return Fail(scheduler.status());
  absl::StatusOr<std::vector<ScheduleInfo>> all = (*scheduler)->Schedules();
  if (!all.ok()) return Fail(all.status());
  if (ctx.json()) {
    std::vector<std::string> items;
    for (const ScheduleInfo& info : *all) items.push_back(ScheduleJson(info));
    absl::PrintF("[%s]\n", absl::StrJoin(items, ","));
    return kExitOk;
  }
  const absl::Time now = RealClock().Now();
  std::vector<Row> rows = {
      {"NAME", "SPEC", "TZ", "TOPIC", "MISSED", "JITTER", "NEXT RUN"}};
  for (const ScheduleInfo& info : *all) {
    const ScheduleRecord& r = info.record;
    rows.push_back({r.name, r.spec, r.options.time_zone, r.topic,
                    MissedPolicyName(r.options.missed),
                    DurationText(r.options.jitter),
                    NextRunText(info.next_run, now)});
  }
  absl::PrintF("%s", Table(rows, 99));
  return kExitOk;
}

int RunSchedule(const Context& ctx) {
  if (ctx.args.empty()) return UsageError(ctx, "missing add, rm or list");
  const std::string& action = ctx.args[0];
  if (action == "add") return RunAdd(ctx);
  if (action == "rm") return RunRemove(ctx);
  if (action == "list") return RunList(ctx);
  return UsageError(
      ctx, absl::StrCat("unknown action '", action, "' (add, rm or list)"));
}

}  // namespace

const CommandSpec& ScheduleCommand() {
  static const CommandSpec* const spec = new CommandSpec{
      "schedule",
      "schedule add NAME SPEC --topic T | rm NAME... | list",
      "periodic jobs: add, remove and list schedules",
      "Schedules live in the store, for every process that runs a scheduler\n"
      "on it; each occurrence becomes one job of TOPIC, with the id\n"
      "NAME@TIME (UTC), enqueued once however many processes run it. The\n"
      "command only stores the schedule: the processes that run schedulers\n"
      "on the store (`delayq work` among them) enqueue the occurrences.\n"
      "\n"
      "  add NAME SPEC   store a schedule, or replace the one named NAME; a\n"
      "                  new SPEC or --tz takes effect from its next\n"
      "                  occurrence. SPEC is a cron line in quotes (\"0 3 * *\n"
      "                  *\", 5 fields, or 6 with seconds first; ranges,\n"
      "                  lists, steps, JAN-DEC, SUN-SAT), @hourly, @daily,\n"
      "                  @weekly, @monthly, @yearly, or \"@every 90s\".\n"
      "  rm NAME...      delete schedules; the jobs they enqueued stay.\n"
      "  list            every schedule and its next run.\n"
      "\n"
      "A daylight-saving change in --tz runs a skipped time at the end of\n"
      "the gap and a repeated time once. --missed says what happens to the\n"
      "occurrences that passed while no scheduler ran: skip them (the\n"
      "default), run the latest once, or all:N, the latest N of them.",
      {
          {"topic", 0, FlagSpec::Arg::kRequired, "TOPIC",
           "(add) the topic of the occurrences' jobs"},
          {"tz", 0, FlagSpec::Arg::kRequired, "ZONE",
           "(add) time zone of a cron SPEC, e.g. Europe/Berlin (default UTC)"},
          {"payload", 0, FlagSpec::Arg::kRequired, "TEXT",
           "(add) the jobs' payload (default empty)"},
          {"missed", 0, FlagSpec::Arg::kRequired, "skip|once|all:N",
           "(add) occurrences missed while no scheduler ran"},
          {"jitter", 0, FlagSpec::Arg::kRequired, "DURATION",
           "(add) spread each job up to this long after its occurrence"},
      },
      /*json=*/true,
      /*takes_command=*/false,
      &RunSchedule,
  };
  return *spec;
}

}  // namespace cli
}  // namespace delayq
