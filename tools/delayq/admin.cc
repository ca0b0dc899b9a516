// Copyright delayq authors.
//
// Commands that change jobs by hand: cancel, kick and retry; and pause and
// resume a topic.

#include <climits>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "delayq/scheduler.h"
#include "tools/common/values.h"
#include "tools/delayq/cli.h"
#include "tools/delayq/store.h"

namespace delayq {
namespace cli {
namespace {

// One failure of a command that acts on several ids, for its JSON.
std::string FailedJson(absl::string_view id, const absl::Status& status) {
  return absl::StrCat("{", JsonText("id", id), ",",
                      JsonText("error", status.message()), "}");
}

// A partial failure is in the JSON too, not only on stderr.
void PrintOutcomesJson(const char* json_key, const std::vector<std::string>& ok,
                       const std::vector<std::string>& failed) {
  absl::PrintF("{\"%s\":[%s],\"failed\":[%s]}\n", json_key,
               absl::StrJoin(ok, ","), absl::StrJoin(failed, ","));
}

// What a command does to one id: the ids it acted on (the one id, or a
// flow's), and how it ended.
using IdAction = std::function<absl::Status(Scheduler&, const std::string&,
                                            std::vector<std::string>*)>;

// Runs `act` on every id; reports each failure and keeps going, so one
// unknown id does not stop the rest. `done` names what happened to each id
// acted on ("cancelled").
int ForEachId(const Context& ctx, const char* done, const char* json_key,
              const IdAction& act) {
  if (ctx.args.empty()) return UsageError(ctx, "missing ID");
  absl::StatusOr<std::unique_ptr<Scheduler>> scheduler =
      OpenScheduler(ctx, /*create=*/false);
  if (!scheduler.ok()) return Fail(scheduler.status());
  int exit = kExitOk;
  std::vector<std::string> ok, failed;
  for (const std::string& id : ctx.args) {
    std::vector<std::string> acted;
    const absl::Status status = act(**scheduler, id, &acted);
    for (const std::string& one : acted) {
      ok.push_back(JsonQuote(one));
      if (!ctx.json()) absl::PrintF("%s %s\n", done, one);
    }
    if (!status.ok()) {
      exit = Fail(status);
      failed.push_back(FailedJson(id, status));
    }
  }
  if (ctx.json()) PrintOutcomesJson(json_key, ok, failed);
  return exit;
}

// An action on the one id.
IdAction OnId(absl::Status (Scheduler::*op)(absl::string_view)) {
  return [op](Scheduler& scheduler, const std::string& id,
              std::vector<std::string>* acted) {
    absl::Status status = (scheduler.*op)(id);
    if (status.ok()) acted->push_back(id);
    return status;
  };
}

// --flow: the id with every job it waits for that is still to run
// (Scheduler::CancelFlow()).
absl::Status CancelFlowOf(Scheduler& scheduler, const std::string& id,
                          std::vector<std::string>* cancelled) {
  absl::StatusOr<std::vector<std::string>> ids = scheduler.CancelFlow(id);
  if (!ids.ok()) return ids.status();
  *cancelled = *std::move(ids);
  return absl::OkStatus();
}

int RunCancel(const Context& ctx) {
  return ForEachId(
      ctx, "cancelled", "cancelled",
      ctx.Has("flow") ? IdAction(CancelFlowOf) : OnId(&Scheduler::Cancel));
}

int RunRetry(const Context& ctx) {
  return ForEachId(ctx, "ready again:", "retried", OnId(&Scheduler::KickJob));
}

int RunPromote(const Context& ctx) {
  return ForEachId(ctx, "ready now:", "promoted", OnId(&Scheduler::Promote));
}

// purge TOPIC [N] --state dead
int RunPurge(const Context& ctx) {
  if (ctx.args.empty()) return UsageError(ctx, "missing TOPIC");
  if (ctx.args.size() > 2) {
    return UsageError(ctx,
                      absl::StrCat("unexpected argument '", ctx.args[2], "'"));
  }
  if (ctx.Get("state") != "dead") {
    return UsageError(ctx,
                      "purge needs --state dead (only dead jobs can be "
                      "purged; cancel deletes a live one)");
  }
  int max = INT_MAX;
  if (ctx.args.size() == 2) {
    absl::StatusOr<int> n = ParseIntValue("N", ctx.args[1], 0, INT_MAX);
    if (!n.ok()) return Fail(n.status());
    max = *n;
  }
  absl::StatusOr<std::unique_ptr<Scheduler>> scheduler =
      OpenScheduler(ctx, /*create=*/false);
  if (!scheduler.ok()) return Fail(scheduler.status());
  absl::StatusOr<int> purged = (*scheduler)->PurgeDead(ctx.args[0], max);
  if (!purged.ok()) return Fail(purged.status());
  if (ctx.json()) {
    absl::PrintF("{\"purged\":%d}\n", *purged);
  } else {
    absl::PrintF("purged %d dead job%s of %s\n", *purged,
                 *purged == 1 ? "" : "s", ctx.args[0]);
  }
  return kExitOk;
}

int RunKick(const Context& ctx) {
  if (ctx.args.empty()) return UsageError(ctx, "missing TOPIC");
  if (ctx.args.size() > 2) {
    return UsageError(ctx,
                      absl::StrCat("unexpected argument '", ctx.args[2], "'"));
  }
  int max = INT_MAX;
  if (ctx.args.size() == 2) {
    absl::StatusOr<int> n = ParseIntValue("N", ctx.args[1], 0, INT_MAX);
    if (!n.ok()) return Fail(n.status());
    max = *n;
  }
  absl::StatusOr<std::unique_ptr<Scheduler>> scheduler =
      OpenScheduler(ctx, /*create=*/false);
  if (!scheduler.ok()) return Fail(scheduler.status());
  absl::StatusOr<int> kicked = (*scheduler)->Kick(ctx.args[0], max);
  if (!kicked.ok()) return Fail(kicked.status());
  if (ctx.json()) {
    absl::PrintF("{\"kicked\":%d}\n", *kicked);
  } else {
    absl::PrintF("kicked %d dead job%s of %s back to ready\n", *kicked,
                 *kicked == 1 ? "" : "s", ctx.args[0]);
  }
  return kExitOk;
}

// pause TOPIC... / resume TOPIC...
int RunSetPaused(const Context& ctx, bool paused) {
  if (ctx.args.empty()) return UsageError(ctx, "missing TOPIC");
  absl::StatusOr<std::unique_ptr<Scheduler>> scheduler =
      OpenScheduler(ctx, /*create=*/false);
  if (!scheduler.ok()) return Fail(scheduler.status());
  for (const std::string& topic : ctx.args) {
    absl::Status s =
        paused ? (*scheduler)->Pause(topic) : (*scheduler)->Resume(topic);
    if (!s.ok()) return Fail(s);
    absl::PrintF("%s %s\n", paused ? "paused" : "resumed", topic);
  }
  return kExitOk;
}

int RunPause(const Context& ctx) { return RunSetPaused(ctx, true); }
int RunResume(const Context& ctx) { return RunSetPaused(ctx, false); }

}  // namespace

const CommandSpec& PauseCommand() {
  static const CommandSpec* const spec = new CommandSpec{
      "pause",
      "pause TOPIC...",
      "stop delivering topics' jobs to every worker",
      "Stops delivery of each TOPIC to every process that shares the store:\n"
      "its jobs still become due and wait as ready until `resume`. Kept in\n"
      "the store, so it survives restarts; `stats` marks paused topics.",
      {},
      /*json=*/false,
      /*takes_command=*/false,
      &RunPause,
  };
  return *spec;
}

const CommandSpec& ResumeCommand() {
  static const CommandSpec* const spec = new CommandSpec{
      "resume",
      "resume TOPIC...",
      "deliver paused topics' jobs again",
      "Resumes each paused TOPIC; waiting workers of every process look\n"
      "again at once.",
      {},
      /*json=*/false,
      /*takes_command=*/false,
      &RunResume,
  };
  return *spec;
}

const CommandSpec& CancelCommand() {
  static const CommandSpec* const spec = new CommandSpec{
      "cancel",
      "cancel [--flow] ID...",
      "delete jobs, whatever their state",
      "Deletes each job, whatever its state. A worker holding one of them\n"
      "finds its lease gone when it finishes. Unknown ids are reported and\n"
      "the others still cancelled; the exit status is 1 if any was unknown.\n"
      "With --flow, each job and every job it waits for, through every\n"
      "level, that is still to run, parents first; done and dead jobs stay.",
      {{"flow", 0, FlagSpec::Arg::kNone, "",
        "also cancel what each job waits for that is still to run"}},
      /*json=*/true,
      /*takes_command=*/false,
      &RunCancel,
  };
  return *spec;
}

const CommandSpec& KickCommand() {
  static const CommandSpec* const spec = new CommandSpec{
      "kick",
      "kick TOPIC [N]",
      "move up to N dead jobs back to ready",
      "Moves up to N dead jobs of TOPIC (all of them without N), oldest\n"
      "death first, back to ready with their attempts reset. Their last\n"
      "error is kept until they fail again.",
      {},
      /*json=*/true,
      /*takes_command=*/false,
      &RunKick,
  };
  return *spec;
}

const CommandSpec& PromoteCommand() {
  static const CommandSpec* const spec = new CommandSpec{
      "promote",
      "promote ID...",
      "run delayed jobs now",
      "Makes each delayed job ready now, whether it waits for its time or\n"
      "for its next attempt after a failure (its attempts are kept). A job\n"
      "that is not delayed is left alone and reported (exit status 1).",
      {},
      /*json=*/true,
      /*takes_command=*/false,
      &RunPromote,
  };
  return *spec;
}

const CommandSpec& PurgeCommand() {
  static const CommandSpec* const spec = new CommandSpec{
      "purge",
      "purge TOPIC [N] --state dead",
      "delete up to N dead jobs of a topic",
      "Deletes up to N dead jobs of TOPIC (all of them without N), oldest\n"
      "death first. --state dead is required: it says what goes.",
      {{"state", 0, FlagSpec::Arg::kRequired, "STATE",
        "the state of the jobs to delete: dead"}},
      /*json=*/true,
      /*takes_command=*/false,
      &RunPurge,
  };
  return *spec;
}

const CommandSpec& RetryCommand() {
  static const CommandSpec* const spec = new CommandSpec{
      "retry",
      "retry ID...",
      "move dead jobs back to ready",
      "Moves each dead job back to ready with its attempts reset, as kick\n"
      "does for a whole topic. A job that is not dead is left alone and\n"
      "reported (exit status 1).",
      {},
      /*json=*/true,
      /*takes_command=*/false,
      &RunRetry,
  };
  return *spec;
}

}  // namespace cli
}  // namespace delayq
