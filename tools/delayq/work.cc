// Copyright delayq authors.
//
// delayq work TOPIC -- COMMAND [ARGS...]: a worker process that runs
// COMMAND for every job of TOPIC. The scheduler's handler threads reserve
// the jobs and keep their leases alive while the command runs; this file
// turns a job into a process and the process's end into ack or fail.

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "delayq/open.h"
#include "delayq/scheduler.h"
#include "tools/common/values.h"
#include "tools/delayq/child.h"
#include "tools/delayq/cli.h"
#include "tools/delayq/signals.h"
#include "tools/delayq/store.h"

extern char** environ;

namespace delayq {
namespace cli {
namespace {

// Our environment without the variables each job sets.
std::vector<std::string> BaseEnvironment() {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const absl::string_view var(*e);
    if (!absl::StartsWith(var, "DELAYQ_JOB_ID=") &&
        !absl::StartsWith(var, "DELAYQ_TOPIC=") &&
        !absl::StartsWith(var, "DELAYQ_ATTEMPT=") &&
        !absl::StartsWith(var, "DELAYQ_MAX_ATTEMPTS=")) {
      env.emplace_back(var);
    }
  }
  return env;
}

// The job's error for a command that did not succeed.
std::string ErrorText(const ChildResult& r, absl::Duration timeout) {
  const std::string tail(absl::StripTrailingAsciiWhitespace(r.stderr_tail));
  if (r.timed_out) {
    std::string error = absl::StrCat("timed out after ", DurationText(timeout));
    if (!tail.empty()) absl::StrAppend(&error, "\n", tail);
    return error;
  }
  if (!tail.empty()) return tail;
  if (r.signal != 0) return absl::StrCat("killed by signal ", r.signal);
  return absl::StrCat("exit status ", r.exit_code);
}

// What comes of a failed attempt, as the worker's log line says it.
std::string NextTry(const Job& job) {
  return job.attempts >= job.max_attempts
             ? "dead"
             : absl::StrCat("retry in ",
                            DurationText(job.backoff.Delay(job.attempts)));
}

// How the end of the command shows in the worker's log line.
std::string Outcome(const ChildResult& r) {
  if (r.timed_out) return "timed out";
  if (r.signal != 0) return absl::StrCat("signal ", r.signal);
  return absl::StrCat("exit ", r.exit_code);
}

class Worker {
 public:
  explicit Worker(ChildSpec base) : base_(std::move(base)) {}

  // The job's result: empty, or the command's stdout with --result.
  absl::StatusOr<std::string> Run(const Job& job) {
    ChildSpec spec = base_;
    spec.env.push_back(absl::StrCat("DELAYQ_JOB_ID=", job.id));
    spec.env.push_back(absl::StrCat("DELAYQ_TOPIC=", job.topic));
    spec.env.push_back(absl::StrCat("DELAYQ_ATTEMPT=", job.attempts));
    spec.env.push_back(absl::StrCat("DELAYQ_MAX_ATTEMPTS=", job.max_attempts));
    absl::StatusOr<ChildResult> result = RunChild(spec, job.payload);
    const std::string head = absl::StrFormat("delayq: %s attempt %d/%d", job.id,
                                             job.attempts, job.max_attempts);
    if (!result.ok()) {
      absl::FPrintF(stderr, "%s failed to start: %s\n", head,
                    result.status().message());
      return absl::UnavailableError(result.status().message());
    }
    const std::string took =
        DurationText(absl::Trunc(result->elapsed, absl::Milliseconds(1)));
    if (result->ok() && result->output_over) {
      absl::FPrintF(stderr, "%s failed in %s (stdout over %d bytes), %s\n",
                    head, took, base_.max_output, NextTry(job));
      return absl::UnknownError(
          absl::StrCat("its stdout is over ", base_.max_output,
                       " bytes, the most a job's result holds"));
    }
    if (result->ok()) {
      absl::FPrintF(stderr, "%s ok in %s\n", head, took);
      return std::move(result->output);
    }
    absl::FPrintF(stderr, "%s failed in %s (%s), %s\n", head, took,
                  Outcome(*result), NextTry(job));
    return absl::UnknownError(ErrorText(*result, base_.timeout));
  }

 private:
  const ChildSpec base_;
};

// True when `topic` has nothing delayed, ready or reserved left.
bool Drained(Scheduler& scheduler, const std::string& topic) {
  absl::StatusOr<TopicStats> stats = scheduler.Stats(topic);
  return stats.ok() && stats->delayed + stats->ready + stats->reserved == 0;
}

int RunWork(const Context& ctx) {
  if (ctx.args.empty()) return UsageError(ctx, "missing TOPIC");
  if (ctx.args.size() > 1) {
    return UsageError(ctx, absl::StrCat("unexpected argument '", ctx.args[1],
                                        "' (put the command after --)"));
  }
  if (ctx.command.empty()) return UsageError(ctx, "missing -- COMMAND");
  const std::string topic = ctx.args[0];
  int concurrency = 1;
  if (ctx.Has("concurrency")) {
    absl::StatusOr<int> n =
        ParseIntValue("-j", ctx.Get("concurrency"), 1, 1024);
    if (!n.ok()) return Fail(n.status());
    concurrency = *n;
  }
  ChildSpec base;
  if (ctx.Has("timeout")) {
    absl::StatusOr<absl::Duration> d =
        ParseDurationValue("--timeout", ctx.Get("timeout"));
    if (!d.ok()) return Fail(d.status());
    if (*d <= absl::ZeroDuration()) return Fail("--timeout must be positive");
    base.timeout = *d;
  }
  absl::StatusOr<absl::Duration> poll_flag =
      PollFlag(ctx, absl::Milliseconds(500));
  if (!poll_flag.ok()) return Fail(poll_flag.status());
  const absl::Duration poll = *poll_flag;
  absl::StatusOr<std::string> program = FindProgram(ctx.command[0]);
  if (!program.ok()) return Fail(program.status());
  if (ctx.Has("result")) {
    base.keep_output = true;
    base.max_output = SchedulerOptions().max_result_bytes;
  }
  base.path = *program;
  base.argv = ctx.command;
  base.env = BaseEnvironment();

  // Signals are waited for below; a command that stops reading its stdin
  // must not kill the worker.
  signal(SIGPIPE, SIG_IGN);
  BlockStopSignals();
  // Before the store starts threads of its own.
  absl::StatusOr<std::unique_ptr<GroupGuard>> guard = GroupGuard::Start();
  if (!guard.ok()) return Fail(guard.status());
  base.guard = guard->get();
  absl::StatusOr<std::unique_ptr<Scheduler>> opened =
      OpenScheduler(ctx, /*create=*/true, poll);
  if (!opened.ok()) return Fail(opened.status());
  Scheduler& scheduler = **opened;
  if (absl::StatusOr<TopicStats> s = scheduler.Stats(topic); !s.ok()) {
    return Fail(s.status());
  }
  Worker worker(base);
  HandlerOptions options;
  options.concurrency = concurrency;
  scheduler.HandleResults(
      topic, [&worker](const Job& job) { return worker.Run(job); }, options);
  if (absl::Status s = scheduler.Start(); !s.ok()) return Fail(s);
  absl::FPrintF(stderr, "delayq: working on %s from %s with %d worker%s\n",
                topic, RedactedUrl(StoreUrl(ctx)), concurrency,
                concurrency == 1 ? "" : "s");

  const bool once = ctx.Has("once");
  for (;;) {
    if (WaitStopSignal(poll) != 0) {
      absl::FPrintF(stderr,
                    "delayq: stopping; waiting for running jobs (signal "
                    "again to quit now)\n");
      break;
    }
    if (once && Drained(scheduler, topic)) break;
  }
  std::atomic<bool> stopped{false};
  std::thread stopper([&] {
    scheduler.Stop(absl::InfiniteDuration());
    stopped = true;
  });
  while (!stopped) {
    if (WaitStopSignal(absl::Milliseconds(100)) != 0) {
      absl::FPrintF(stderr,
                    "delayq: quitting; running jobs come back after their "
                    "ttr\n");
      _exit(130);
    }
  }
  stopper.join();
  return kExitOk;
}

}  // namespace

const CommandSpec& WorkCommand() {
  static const CommandSpec* const spec = new CommandSpec{
      "work",
      "work TOPIC [-j N] [--timeout D] [--result] -- COMMAND [ARGS...]",
      "run COMMAND for each job of TOPIC",
      "Runs COMMAND (directly, no shell: write `sh -c '...'` for one) for\n"
      "every job of TOPIC, with the payload on its stdin and these in its\n"
      "environment: DELAYQ_JOB_ID, DELAYQ_TOPIC, DELAYQ_ATTEMPT (1 for the\n"
      "first try) and DELAYQ_MAX_ATTEMPTS. Its stdout and stderr are the\n"
      "worker's; with --result its stdout is the job's result instead.\n"
      "\n"
      "Exit status 0 acknowledges the job (it is deleted, or kept as done\n"
      "with its result when it was added with --keep-for). Anything else\n"
      "fails it with the last 2 KB of the command's stderr as its error: it\n"
      "runs again after its backoff, or is dead when its attempts are used\n"
      "up. While the command runs its lease is extended, so a long command\n"
      "is not handed to another worker; with --timeout it is sent SIGTERM\n"
      "(SIGKILL 5s later) and the job fails with \"timed out after D\". If\n"
      "the worker itself dies, its commands are killed and their jobs come\n"
      "back after their ttr.\n"
      "\n"
      "One line per finished job goes to stderr. SIGINT or SIGTERM stops\n"
      "taking jobs, waits for the running ones and exits 0; a second one\n"
      "quits at once (exit 130).\n"
      "\n"
      "Example:\n"
      "  delayq work mail -j 4 --timeout 2m -- ./send-mail --from ops",
      {
          {"concurrency", 'j', FlagSpec::Arg::kRequired, "N",
           "run up to N commands at once (default 1)"},
          {"timeout", 0, FlagSpec::Arg::kRequired, "DURATION",
           "kill a command running longer and fail its job"},
          {"result", 0, FlagSpec::Arg::kNone, "",
           "keep the command's stdout (up to 64 KiB) as the job's result; "
           "more fails the job"},
          {"once", 0, FlagSpec::Arg::kNone, "",
           "exit when TOPIC has nothing delayed, ready or reserved"},
          {"poll", 0, FlagSpec::Arg::kRequired, "DURATION",
           "how often to look for jobs other processes added (default "
           "500ms)"},
      },
      /*json=*/false,
      /*takes_command=*/true,
      &RunWork,
  };
  return *spec;
}

}  // namespace cli
}  // namespace delayq
