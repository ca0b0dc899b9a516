// Copyright delayq authors.
//
// delayq batch open|close|show: a group of jobs and the completion job that
// runs once all of them have finished (delayq/batch.h).

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "delayq/scheduler.h"
#include "tools/common/text.h"
#include "tools/delayq/cli.h"
#include "tools/delayq/job_flags.h"
#include "tools/delayq/store.h"

namespace delayq {
namespace cli {
namespace {

void PrintBatch(const Context& ctx, const Batch& b) {
  if (ctx.json()) {
    absl::PrintF(
        "{\"id\":%s,\"completion_id\":%s,\"closed\":%s,\"total\":%d,"
        "\"done\":%d,\"dead\":%d,\"cancelled\":%d,\"pending\":%d,"
        "\"complete\":%s}\n",
        JsonQuote(b.id), JsonQuote(b.completion_id),
        b.closed ? "true" : "false", b.total, b.done, b.dead, b.cancelled,
        b.pending(), b.complete() ? "true" : "false");
    return;
  }
  absl::PrintF("batch      %s (%s)\n", b.id, b.closed ? "closed" : "open");
  absl::PrintF("jobs       %d: %d done, %d dead, %d cancelled, %d pending\n",
               b.total, b.done, b.dead, b.cancelled, b.pending());
  absl::PrintF("completion %s (%s)\n", b.completion_id,
               b.complete() ? "released" : "waiting");
}

// Only `open` takes the job flags: they describe its completion job.
int RefuseJobFlags(const Context& ctx) {
  for (const FlagSpec& flag : JobFlags()) {
    if (ctx.Has(flag.name)) {
      return UsageError(
          ctx, absl::StrCat("--", flag.name, " is for `batch open` only"));
    }
  }
  return kExitOk;
}

int RunOpen(const Context& ctx) {
  // "open" is argument 0: TOPIC follows it.
  return AddOneJob(ctx, 1,
                   [](Scheduler& scheduler, const std::string& topic,
                      const std::string& payload, const JobOptions& options) {
                     return scheduler.OpenBatch(topic, payload, options);
                   });
}

// close ID... or show ID...
int RunOnBatches(const Context& ctx, bool close) {
  if (int refused = RefuseJobFlags(ctx); refused != kExitOk) return refused;
  if (ctx.args.size() < 2) return UsageError(ctx, "missing ID");
  absl::StatusOr<std::unique_ptr<Scheduler>> scheduler =
      OpenScheduler(ctx, /*create=*/false);
  if (!scheduler.ok()) return Fail(scheduler.status());
  for (size_t i = 1; i < ctx.args.size(); ++i) {
    const std::string& id = ctx.args[i];
    if (close) {
      if (absl::Status s = (*scheduler)->CloseBatch(id); !s.ok()) {
        return Fail(s);
      }
    }
    absl::StatusOr<Batch> batch = (*scheduler)->GetBatch(id);
    if (!batch.ok()) return Fail(batch.status());
    PrintBatch(ctx, *batch);
  }
  return kExitOk;
}

int RunBatch(const Context& ctx) {
  if (ctx.args.empty()) return UsageError(ctx, "missing open, close or show");
  const std::string& action = ctx.args[0];
  if (action == "open") return RunOpen(ctx);
  if (action == "close") return RunOnBatches(ctx, /*close=*/true);
  if (action == "show") return RunOnBatches(ctx, /*close=*/false);
  return UsageError(
      ctx, absl::StrCat("unknown action '", action, "' (open, close or show)"));
}

}  // namespace

const CommandSpec& BatchCommand() {
  static const CommandSpec* const spec = new CommandSpec{
      "batch",
      "batch open TOPIC [PAYLOAD | -] | close ID... | show ID...",
      "a group of jobs and the job that runs once all of them finished",
      "A batch groups jobs added over time (`delayq add --batch ID`, from\n"
      "any process) and names a completion job, which waits until the\n"
      "batch is closed and every job of it is done, dead or cancelled; then\n"
      "it becomes ready, once. Its id is the batch's: its worker reads the\n"
      "final counts with `delayq batch show ID`. On a sharded Redis\n"
      "namespace a batch's jobs carry its hash tag ({march}:invoice-17).\n"
      "\n"
      "  open TOPIC [PAYLOAD | -]  open a batch whose completion job is\n"
      "                            PAYLOAD for TOPIC (the job flags of `add`\n"
      "                            describe it); print the batch's id.\n"
      "  close ID...               take no more jobs; the completion job is\n"
      "                            released as soon as nothing is pending.\n"
      "  show ID...                the counts, and whether it is closed.\n"
      "\n"
      "Examples:\n"
      "  id=$(delayq batch open invoices.sent march)\n"
      "  delayq add invoices.send 17 --batch \"$id\"\n"
      "  delayq batch close \"$id\"\n"
      "  delayq batch show \"$id\" --json",
      JobFlags(),
      /*json=*/true,
      /*takes_command=*/false,
      &RunBatch,
  };
  return *spec;
}

}  // namespace cli
}  // namespace delayq
