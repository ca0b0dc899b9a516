// Copyright delayq authors.
//
// delayq add TOPIC [PAYLOAD | -]: enqueue one job and print its id.

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "delayq/scheduler.h"
#include "tools/common/values.h"
#include "tools/delayq/cli.h"
#include "tools/delayq/job_flags.h"
#include "tools/delayq/store.h"

namespace delayq {
namespace cli {
namespace {

int RunAdd(const Context& ctx) {
  if (ctx.args.empty()) return UsageError(ctx, "missing TOPIC");
  if (ctx.args.size() > 2) {
    return UsageError(ctx, absl::StrCat("unexpected argument '", ctx.args[2],
                                        "' (quote a payload with spaces)"));
  }
  if (ctx.Has("delay") && ctx.Has("at")) {
    return UsageError(ctx, "give --delay or --at, not both");
  }
  JobOptions options;
  if (absl::Status s = ReadJobOptions(ctx, options); !s.ok()) return Fail(s);
  absl::StatusOr<std::string> payload = ReadPayload(ctx, 1);
  if (!payload.ok()) return Fail(payload.status());
  absl::StatusOr<std::unique_ptr<Scheduler>> scheduler =
      OpenScheduler(ctx, /*create=*/true);
  if (!scheduler.ok()) return Fail(scheduler.status());
  absl::StatusOr<std::string> id =
      (*scheduler)->Enqueue(ctx.args[0], *payload, options);
  if (!id.ok()) return Fail(id.status());
  if (ctx.json()) {
    absl::PrintF("{\"id\":%s}\n", JsonQuote(*id));
  } else {
    absl::PrintF("%s\n", *id);
  }
  return kExitOk;
}

}  // namespace

const CommandSpec& AddCommand() {
  static const CommandSpec* const spec = new CommandSpec{
      "add",
      "add TOPIC [PAYLOAD | -]",
      "enqueue a job and print its id",
      "Enqueues one job for TOPIC and prints its id. The payload is the\n"
      "second argument, or stdin when it is '-' (any bytes); without one it\n"
      "is empty. The job is ready at once unless --delay or --at says when.\n"
      "\n"
      "Examples:\n"
      "  delayq add orders.expire 42 --delay 30m --id order-42\n"
      "  delayq add reports - --at 2026-12-01T10:00:00Z < report.json\n"
      "  delayq add mail '{\"to\":\"a@b.c\"}' --backoff exp:1s:10m "
      "--max-attempts 5",
      JobFlags(),
      /*json=*/true,
      /*takes_command=*/false,
      &RunAdd,
  };
  return *spec;
}

}  // namespace cli
}  // namespace delayq
