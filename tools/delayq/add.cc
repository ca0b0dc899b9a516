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
  return AddOneJob(ctx, 0,
                   [](Scheduler& scheduler, const std::string& topic,
                      const std::string& payload, const JobOptions& options) {
                     return scheduler.Enqueue(topic, payload, options);
                   });
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
