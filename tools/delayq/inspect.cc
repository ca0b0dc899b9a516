// Copyright delayq authors.
//
// Commands that look at the store: stats, list and get.
//
// Each first promotes what is due (Scheduler::Tick), as any process using
// the store may: a delayed job whose time has come shows as ready, and a
// lease that ran out as ready again (or dead), which is what a worker would
// find. A store that refuses the write (read-only file) is still shown as
// stored.

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "delayq/clock.h"
#include "delayq/open.h"
#include "delayq/scheduler.h"
#include "tools/common/values.h"
#include "tools/delayq/cli.h"
#include "tools/delayq/signals.h"
#include "tools/delayq/store.h"
#include "tools/delayq/table.h"
#include "tools/serve/api/json_codec.h"

namespace delayq {
namespace cli {
namespace {

std::string JobJson(const Job& job) {
  std::string out;
  serve::AppendJobJson(job, &out);
  return out;
}

absl::StatusOr<std::unique_ptr<Scheduler>> OpenAndPromote(const Context& ctx) {
  absl::StatusOr<std::unique_ptr<Scheduler>> scheduler =
      OpenScheduler(ctx, /*create=*/false);
  if (scheduler.ok()) (*scheduler)->Tick().IgnoreError();
  return scheduler;
}

// ---- stats ----

// What each topic did lately, from the store's counts: in the last whole
// minute, and in the hour up to now (the 60 whole minutes before this one
// and this one so far).
struct Recent {
  JobCounts minute;
  JobCounts hour;
};

// By topic; none on a store that keeps no counts.
absl::StatusOr<std::map<std::string, Recent>> RecentActivity(
    Scheduler& scheduler) {
  const absl::Time this_minute = MinuteOf(RealClock().Now());
  absl::StatusOr<std::vector<TopicMinute>> minutes = scheduler.Counts(
      this_minute - absl::Minutes(60), this_minute + absl::Minutes(1));
  std::map<std::string, Recent> recent;
  if (absl::IsUnimplemented(minutes.status())) return recent;
  if (!minutes.ok()) return minutes.status();
  for (const TopicMinute& m : *minutes) {
    Recent& r = recent[m.topic];
    r.hour += m.counts;
    if (m.minute == this_minute - absl::Minutes(1)) r.minute += m.counts;
  }
  return recent;
}

std::string RecentJson(const JobCounts& c) {
  return absl::StrCat("{\"enqueued\":", c.enqueued, ",\"done\":", c.done,
                      ",\"failed\":", c.failed, ",\"dead\":", c.dead, "}");
}

absl::StatusOr<std::string> StatsText(const Context& ctx,
                                      Scheduler& scheduler) {
  // A store that cannot pause topics has none paused.
  absl::StatusOr<std::vector<std::string>> paused_list =
      scheduler.PausedTopics();
  if (!paused_list.ok() && !absl::IsUnimplemented(paused_list.status())) {
    return paused_list.status();
  }
  const std::set<std::string> paused =
      paused_list.ok()
          ? std::set<std::string>(paused_list->begin(), paused_list->end())
          : std::set<std::string>();
  // Likewise a store that cannot limit topics has none limited.
  absl::StatusOr<std::vector<LimitedTopic>> limit_list = scheduler.Limits();
  if (!limit_list.ok() && !absl::IsUnimplemented(limit_list.status())) {
    return limit_list.status();
  }
  std::map<std::string, TopicLimit> limits;
  if (limit_list.ok()) {
    for (const LimitedTopic& t : *limit_list) limits[t.topic] = t.limit;
  }
  absl::StatusOr<std::map<std::string, Recent>> recent =
      RecentActivity(scheduler);
  if (!recent.ok()) return recent.status();
  std::vector<std::string> topics;
  if (ctx.args.empty()) {
    absl::StatusOr<std::vector<std::string>> all = scheduler.Topics();
    if (!all.ok()) return all.status();
    // Paused and limited topics are shown even while they have no jobs, and
    // so are those that had work in the last hour.
    std::set<std::string> both(all->begin(), all->end());
    both.insert(paused.begin(), paused.end());
    for (const auto& [topic, limit] : limits) both.insert(topic);
    for (const auto& [topic, r] : *recent) both.insert(topic);
    topics.assign(both.begin(), both.end());
  } else {
    topics = ctx.args;
  }
  // KEPT: done jobs the store keeps (JobOptions::keep_for).
  std::vector<Row> rows = {{"TOPIC", "DELAYED", "READY", "RESERVED", "DEAD",
                            "KEPT", "DONE/MIN", "FAILED/MIN", "DONE/H",
                            "FAILED/H"}};
  std::vector<std::string> json;
  for (const std::string& topic : topics) {
    absl::StatusOr<TopicStats> s = scheduler.Stats(topic);
    if (!s.ok()) return s.status();
    const bool is_paused = paused.count(topic) > 0;
    auto limit = limits.find(topic);
    std::vector<std::string> notes;
    if (is_paused) notes.push_back("paused");
    if (limit != limits.end()) notes.push_back(LimitText(limit->second));
    const Recent r = recent->count(topic) ? recent->at(topic) : Recent();
    rows.push_back(
        {notes.empty()
             ? topic
             : absl::StrCat(topic, " (", absl::StrJoin(notes, "; "), ")"),
         absl::StrCat(s->delayed), absl::StrCat(s->ready),
         absl::StrCat(s->reserved), absl::StrCat(s->dead),
         absl::StrCat(s->done), absl::StrCat(r.minute.done),
         absl::StrCat(r.minute.failed), absl::StrCat(r.hour.done),
         absl::StrCat(r.hour.failed)});
    std::string limit_json;
    if (limit != limits.end()) {
      const TopicLimit& l = limit->second;
      limit_json = absl::StrCat(
          ",\"limit\":{\"rate\":", l.rate,
          ",\"period_ms\":", absl::ToInt64Milliseconds(l.period),
          ",\"burst\":", l.burst, ",\"concurrency\":", l.concurrency, "}");
    }
    json.push_back(absl::StrCat(
        "{", JsonText("topic", topic), ",\"delayed\":", s->delayed,
        ",\"ready\":", s->ready, ",\"reserved\":", s->reserved, ",\"dead\":",
        s->dead, ",\"done\":", s->done, ",\"waiting\":", s->waiting,
        ",\"paused\":", is_paused ? "true" : "false", limit_json,
        ",\"last_minute\":", RecentJson(r.minute),
        ",\"last_hour\":", RecentJson(r.hour), "}"));
  }
  if (ctx.json()) return absl::StrCat("[", absl::StrJoin(json, ","), "]\n");
  std::string text = Table(rows, 1);
  if (topics.empty()) text += "(no jobs)\n";
  return text;
}

int RunStats(const Context& ctx) {
  absl::Duration every = absl::Seconds(2);
  if (ctx.Has("watch") && !ctx.Get("watch").empty()) {
    absl::StatusOr<absl::Duration> d =
        ParseDurationValue("--watch", ctx.Get("watch"));
    if (!d.ok()) return Fail(d.status());
    if (*d < absl::Milliseconds(100)) {
      return Fail("--watch interval must be at least 100ms");
    }
    every = *d;
  }
  if (ctx.Has("watch")) BlockStopSignals();
  absl::StatusOr<std::unique_ptr<Scheduler>> scheduler = OpenAndPromote(ctx);
  if (!scheduler.ok()) return Fail(scheduler.status());
  if (!ctx.Has("watch")) {
    absl::StatusOr<std::string> text = StatsText(ctx, **scheduler);
    if (!text.ok()) return Fail(text.status());
    absl::PrintF("%s", *text);
    return kExitOk;
  }
  const bool clear = !ctx.json() && isatty(STDOUT_FILENO);
  for (;;) {
    (*scheduler)->Tick().IgnoreError();
    absl::StatusOr<std::string> text = StatsText(ctx, **scheduler);
    if (clear) absl::PrintF("\033[H\033[2J");
    if (!ctx.json()) {
      absl::PrintF("%s  %s  every %s, Ctrl-C to stop\n\n",
                   LocalText(RealClock().Now()), RedactedUrl(StoreUrl(ctx)),
                   DurationText(every));
    }
    // A store error while watching is shown and retried, not fatal.
    absl::PrintF("%s",
                 text.ok()
                     ? *text
                     : absl::StrCat("delayq: ", text.status().message(), "\n"));
    if (!ctx.json()) absl::PrintF("\n");
    std::fflush(stdout);
    if (WaitStopSignal(every) != 0) return kExitOk;
  }
}

// ---- list ----

std::string When(const Job& job, absl::Time now) {
  switch (job.state) {
    case JobState::kDelayed:
    case JobState::kReady:
      return absl::StrCat("due ", RelativeText(job.run_at, now));
    case JobState::kReserved:
      return absl::StrCat("lease ends ", RelativeText(job.deadline, now));
    case JobState::kDead:
      return absl::StrCat("died ", RelativeText(job.finished_at, now));
    case JobState::kDone:
      return absl::StrCat("done ", RelativeText(job.finished_at, now));
    case JobState::kWaiting:
      return "waiting for other jobs";
  }
  return "";
}

int RunList(const Context& ctx) {
  if (ctx.args.empty()) return UsageError(ctx, "missing TOPIC");
  if (ctx.args.size() > 1) {
    return UsageError(ctx,
                      absl::StrCat("unexpected argument '", ctx.args[1], "'"));
  }
  std::vector<JobState> states = {JobState::kReady,   JobState::kReserved,
                                  JobState::kDelayed, JobState::kWaiting,
                                  JobState::kDead,    JobState::kDone};
  if (ctx.Has("state")) {
    JobState state;
    if (!ParseJobState(ctx.Get("state"), &state)) {
      return Fail(absl::StrCat("bad --state: '", ctx.Get("state"), "' (",
                               kJobStatesText, ")"));
    }
    states = {state};
  }
  int limit = 100;
  if (ctx.Has("limit")) {
    absl::StatusOr<int> n =
        ParseIntValue("--limit", ctx.Get("limit"), 1, 1000000);
    if (!n.ok()) return Fail(n.status());
    limit = *n;
  }
  // A cursor continues one state's list.
  if (ctx.Has("cursor") && states.size() != 1) {
    return UsageError(ctx, "--cursor needs --state");
  }
  absl::StatusOr<std::unique_ptr<Scheduler>> scheduler = OpenAndPromote(ctx);
  if (!scheduler.ok()) return Fail(scheduler.status());
  std::vector<Job> jobs;
  std::string next_cursor;
  for (JobState state : states) {
    const int left = limit - static_cast<int>(jobs.size());
    if (left <= 0) break;
    absl::StatusOr<JobPage> page =
        (*scheduler)
            ->ListPage(ctx.args[0], state, left,
                       ctx.Has("cursor") ? ctx.Get("cursor") : "");
    if (!page.ok()) return Fail(page.status());
    jobs.insert(jobs.end(), page->jobs.begin(), page->jobs.end());
    if (states.size() == 1) next_cursor = page->next_cursor;
  }
  if (ctx.json()) {
    std::vector<std::string> items;
    for (const Job& job : jobs) items.push_back(JobJson(job));
    // With --cursor, the page and the next one's cursor; without, the
    // plain list as before.
    if (ctx.Has("cursor")) {
      absl::PrintF("{\"jobs\":[%s],\"next_cursor\":\"%s\"}\n",
                   absl::StrJoin(items, ","), next_cursor);
    } else {
      absl::PrintF("[%s]\n", absl::StrJoin(items, ","));
    }
    return kExitOk;
  }
  const absl::Time now = RealClock().Now();
  std::vector<Row> rows = {
      {"ID", "STATE", "PRI", "TRIES", "WHEN", "PAYLOAD", "LAST ERROR"}};
  for (const Job& job : jobs) {
    rows.push_back({job.id, std::string(JobStateName(job.state)),
                    absl::StrCat(job.priority),
                    absl::StrCat(job.attempts, "/", job.max_attempts),
                    When(job, now), Preview(job.payload, 30),
                    Preview(job.last_error, 50)});
  }
  absl::PrintF("%s", Table(rows, 99));
  if (jobs.empty()) absl::PrintF("(no jobs)\n");
  // The cursor is URL-safe base64: no quoting needed.
  if (!next_cursor.empty()) {
    absl::PrintF("next page: --cursor %s\n", next_cursor);
  }
  return kExitOk;
}

// ---- workers ----

int RunWorkers(const Context& ctx) {
  if (!ctx.args.empty()) {
    return UsageError(ctx,
                      absl::StrCat("unexpected argument '", ctx.args[0], "'"));
  }
  int limit = 1000;
  if (ctx.Has("limit")) {
    absl::StatusOr<int> n =
        ParseIntValue("--limit", ctx.Get("limit"), 1, 1000000);
    if (!n.ok()) return Fail(n.status());
    limit = *n;
  }
  absl::StatusOr<std::unique_ptr<Scheduler>> scheduler = OpenAndPromote(ctx);
  if (!scheduler.ok()) return Fail(scheduler.status());
  absl::StatusOr<JobPage> page =
      (*scheduler)
          ->ListLeases(limit, ctx.Has("cursor") ? ctx.Get("cursor") : "");
  if (!page.ok()) return Fail(page.status());
  std::vector<Job>& leases = page->jobs;
  // Grouped by holder, the longest held first within each.
  std::stable_sort(leases.begin(), leases.end(),
                   [](const Job& a, const Job& b) {
                     if (a.holder != b.holder) return a.holder < b.holder;
                     return a.reserved_at < b.reserved_at;
                   });
  if (ctx.json()) {
    std::vector<std::string> items;
    for (const Job& job : leases) items.push_back(JobJson(job));
    // As list does: with --cursor, the page and the next one's cursor.
    if (ctx.Has("cursor")) {
      absl::PrintF("{\"leases\":[%s],\"next_cursor\":\"%s\"}\n",
                   absl::StrJoin(items, ","), page->next_cursor);
    } else {
      absl::PrintF("[%s]\n", absl::StrJoin(items, ","));
    }
    return kExitOk;
  }
  const absl::Time now = RealClock().Now();
  std::vector<Row> rows = {
      {"HOLDER", "TOPIC", "ID", "HELD SINCE", "LEASE ENDS", "TRIES"}};
  for (const Job& job : leases) {
    rows.push_back({job.holder.empty() ? "-" : Preview(job.holder, 40),
                    job.topic, job.id,
                    job.reserved_at == absl::InfinitePast()
                        ? "-"
                        : RelativeText(job.reserved_at, now),
                    RelativeText(job.deadline, now),
                    absl::StrCat(job.attempts, "/", job.max_attempts)});
  }
  absl::PrintF("%s", Table(rows, 99));
  if (leases.empty()) absl::PrintF("(no live leases)\n");
  // The cursor is URL-safe base64 and dots: no quoting needed.
  if (!page->next_cursor.empty()) {
    absl::PrintF("next page: --cursor %s\n", page->next_cursor);
  }
  return kExitOk;
}

// ---- get ----

int PrintJob(const Context& ctx, const absl::StatusOr<Job>& job);

std::string TimeLine(absl::Time t, absl::Time now) {
  return absl::StrCat(LocalText(t), "  (", UtcText(t), ", ",
                      RelativeText(t, now), ")");
}

int RunGet(const Context& ctx) {
  if (ctx.args.empty()) return UsageError(ctx, "missing ID");
  if (ctx.args.size() > 1) {
    return UsageError(ctx,
                      absl::StrCat("unexpected argument '", ctx.args[1], "'"));
  }
  absl::StatusOr<std::unique_ptr<Scheduler>> scheduler = OpenAndPromote(ctx);
  if (!scheduler.ok()) return Fail(scheduler.status());
  absl::StatusOr<Job> job = (*scheduler)->Get(ctx.args[0]);
  if (!job.ok()) return Fail(job.status());
  return PrintJob(ctx, job);
}

// ---- wait ----

int RunWait(const Context& ctx) {
  if (ctx.args.empty()) return UsageError(ctx, "missing ID");
  if (ctx.args.size() > 1) {
    return UsageError(ctx,
                      absl::StrCat("unexpected argument '", ctx.args[1], "'"));
  }
  absl::Duration timeout = absl::Seconds(30);
  if (ctx.Has("timeout")) {
    absl::StatusOr<absl::Duration> d =
        ParseDurationValue("--timeout", ctx.Get("timeout"));
    if (!d.ok()) return Fail(d.status());
    timeout = *d;
  }
  absl::StatusOr<std::unique_ptr<Scheduler>> scheduler =
      OpenScheduler(ctx, /*create=*/false);
  if (!scheduler.ok()) return Fail(scheduler.status());
  absl::StatusOr<Job> job = (*scheduler)->WaitForResult(ctx.args[0], timeout);
  if (!job.ok()) return Fail(job.status());
  const int printed = PrintJob(ctx, job);
  return printed != kExitOk || job->state == JobState::kDone ? printed
                                                             : kExitFailed;
}

// Prints `job` as `get` does.
int PrintJob(const Context& ctx, const absl::StatusOr<Job>& job) {
  if (ctx.Has("payload") || ctx.Has("result")) {
    const std::string& bytes = ctx.Has("payload") ? job->payload : job->result;
    std::fwrite(bytes.data(), 1, bytes.size(), stdout);
    return kExitOk;
  }
  if (ctx.json()) {
    absl::PrintF("%s\n", JobJson(*job));
    return kExitOk;
  }
  const absl::Time now = RealClock().Now();
  std::vector<Row> rows = {
      {"id:", job->id},
      {"topic:", job->topic},
      {"state:", std::string(JobStateName(job->state))},
      {"priority:", absl::StrCat(job->priority)},
      {"attempts:", absl::StrCat(job->attempts, " of ", job->max_attempts)},
      {"ttr:", DurationText(job->ttr)},
      {"backoff:", BackoffText(job->backoff)},
      {"enqueued at:", TimeLine(job->enqueued_at, now)},
      {"run at:", TimeLine(job->run_at, now)},
  };
  if (job->state == JobState::kReserved) {
    rows.push_back({"lease ends:", TimeLine(job->deadline, now)});
  }
  if (job->finished_at != absl::InfinitePast()) {
    rows.push_back({job->state == JobState::kDead ? "died at:" : "done at:",
                    TimeLine(job->finished_at, now)});
  }
  if (job->keep_for > absl::ZeroDuration()) {
    rows.push_back(
        {"kept for:", absl::StrCat(DurationText(job->keep_for),
                                   " after it is done (its topic keeps at "
                                   "most ",
                                   job->keep_at_most, ")")});
  }
  if (job->expire_at != absl::InfiniteFuture()) {
    rows.push_back(
        {"expires at:",
         absl::StrCat(TimeLine(job->expire_at, now),
                      job->discard_expired ? "  (then deleted)" : "")});
  }
  if (job->unique_for > absl::ZeroDuration()) {
    rows.push_back({"unique for:", absl::StrCat(DurationText(job->unique_for),
                                                " after it is done")});
  }
  if (!job->after.empty()) {
    rows.push_back(
        {"waits for:", Preview(absl::StrJoin(job->after, " "), 2048)});
  }
  rows.push_back({"last error:", job->last_error.empty()
                                     ? "-"
                                     : Preview(job->last_error, 2048)});
  rows.push_back({"payload:", absl::StrCat(job->payload.size(), " bytes  ",
                                           Preview(job->payload, 200))});
  if (job->state == JobState::kDone) {
    rows.push_back({"result:", absl::StrCat(job->result.size(), " bytes  ",
                                            Preview(job->result, 200))});
  }
  absl::PrintF("%s", Table(rows, 99));
  return kExitOk;
}

}  // namespace

const CommandSpec& StatsCommand() {
  static const CommandSpec* const spec = new CommandSpec{
      "stats",
      "stats [TOPIC...]",
      "jobs per state for every topic",
      "Prints how many jobs of each topic (every topic with a job or with\n"
      "work in the last hour, or the ones named) are delayed, ready,\n"
      "reserved and dead, and, from the store's counts, how many were done\n"
      "and how many attempts failed in the last whole minute (/MIN) and in\n"
      "the hour up to now (/H). With --watch the\n"
      "table is refreshed every INTERVAL (default 2s) until Ctrl-C; with\n"
      "--json as well, one JSON array per refresh.",
      {{"watch", 'w', FlagSpec::Arg::kDuration, "INTERVAL",
        "refresh until interrupted (e.g. --watch 1s; --watch=1s when a "
        "TOPIC follows)"}},
      /*json=*/true,
      /*takes_command=*/false,
      &RunStats,
  };
  return *spec;
}

const CommandSpec& ListCommand() {
  static const CommandSpec* const spec = new CommandSpec{
      "list",
      "list TOPIC [--state STATE] [--limit N] [--cursor C]",
      "the jobs of a topic",
      "Lists TOPIC's jobs: ready ones in the order workers will take them,\n"
      "reserved ones by lease end, delayed ones by due time, dead ones\n"
      "oldest first, done ones (kept with --keep-for) in the order they\n"
      "leave. Without --state every state is listed, in that order.\n"
      "With --state, a list longer than --limit ends with the cursor of\n"
      "its next page: give it back with --cursor to see that page (a job\n"
      "that stays in the state is seen once, whatever else comes and goes).\n"
      "With --cursor, --json prints {\"jobs\": [...], \"next_cursor\": C},\n"
      "C empty at the end; --cursor '' starts at the first page.",
      {{"state", 0, FlagSpec::Arg::kRequired, "STATE",
        absl::StrCat("only the jobs of one state: ", kJobStatesText)},
       {"limit", 'n', FlagSpec::Arg::kRequired, "N",
        "at most N jobs (default 100)"},
       {"cursor", 0, FlagSpec::Arg::kRequired, "C",
        "the page after cursor C, as a list printed it (needs --state)"}},
      /*json=*/true,
      /*takes_command=*/false,
      &RunList,
  };
  return *spec;
}

const CommandSpec& WorkersCommand() {
  static const CommandSpec* const spec = new CommandSpec{
      "workers",
      "workers [--limit N] [--cursor C]",
      "who holds which lease, and since when",
      "Lists the live leases of every topic with their holders (the name\n"
      "of the scheduler that reserved each job, host:pid unless it was\n"
      "named; the worker's or the server's for a job reserved over HTTP),\n"
      "grouped by holder, the longest held first. More than --limit end\n"
      "with the cursor of the next page: give it back with --cursor to see\n"
      "that page. With --cursor, --json prints {\"leases\": [...],\n"
      "\"next_cursor\": C}, C empty at the end.",
      {{"limit", 'n', FlagSpec::Arg::kRequired, "N",
        "at most N leases (default 1000)"},
       {"cursor", 0, FlagSpec::Arg::kRequired, "C",
        "the page after cursor C, as workers printed it"}},
      /*json=*/true,
      /*takes_command=*/false,
      &RunWorkers,
  };
  return *spec;
}

const CommandSpec& WaitCommand() {
  static const CommandSpec* const spec = new CommandSpec{
      "wait",
      "wait ID [--timeout DURATION]",
      "wait for a job to finish and print it",
      "Waits until the job is done or dead, then prints it as `get` does\n"
      "(--result writes its result alone). Exits 0 when it is done, 1 when\n"
      "it is dead, when it left the store without being kept (add it with\n"
      "--keep-for to keep it and its result), or when --timeout (default\n"
      "30s) passes first.",
      {{"timeout", 0, FlagSpec::Arg::kRequired, "DURATION",
        "give up after this long (default 30s)"},
       {"payload", 0, FlagSpec::Arg::kNone, "",
        "write only the payload, byte for byte"},
       {"result", 0, FlagSpec::Arg::kNone, "",
        "write only the result, byte for byte"}},
      /*json=*/true,
      /*takes_command=*/false,
      &RunWait,
  };
  return *spec;
}

const CommandSpec& GetCommand() {
  static const CommandSpec* const spec = new CommandSpec{
      "get",
      "get ID",
      "every field of one job",
      "Prints every field of the job: state, attempts, options, its times\n"
      "in local time and UTC, its last error, its payload and, once done,\n"
      "its result (escaped; --payload and --result write the raw bytes\n"
      "alone).",
      {{"payload", 0, FlagSpec::Arg::kNone, "",
        "write only the payload, byte for byte"},
       {"result", 0, FlagSpec::Arg::kNone, "",
        "write only the result of a done job, byte for byte"}},
      /*json=*/true,
      /*takes_command=*/false,
      &RunGet,
  };
  return *spec;
}

}  // namespace cli
}  // namespace delayq
