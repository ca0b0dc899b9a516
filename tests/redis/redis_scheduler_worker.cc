// Copyright delayq authors.
//
// A process for the scheduler-level multi-process tests: one Scheduler on a
// redis:// store that may enqueue a known set of jobs and may run handlers
// for some topics. Each handled job is recorded as one line appended to
// OUT_FILE with a single write(2), so lines survive a SIGKILL of the process.
//
//   redis_scheduler_worker URL OUT_FILE [key=value...]
//
//   handle=T1,T2   topics to run handlers for (none: enqueue, then exit)
//   threads=N      worker threads per topic (default 3)
//   batch=N        leases per reserve call (default 1)
//   poll_ms=N      the scheduler's poll interval (default 200)
//   enqueue=PREFIX:GROUPS:T1,T2
//                  enqueue GROUPS groups of 10 jobs with ids PREFIX-g-k
//                  (see EnqueueGroups() for the delays and topics)
//   delay_ms=N     every enqueued group is delayed by N ms instead
//   ttr_ms=N       ttr of enqueued jobs (default 60000)
//   payload=TEXT   payload of enqueued jobs (default "work")
//   hang=1         a handler whose job's payload is "hang" records
//                  "begin ID ATTEMPTS" and then blocks until the process is
//                  killed (it simulates a worker stuck mid-job)
//
// Lines: "done ID ATTEMPTS PID" for every job a handler finished.
// With handlers, the process runs until its stdin reaches end of file, then
// stops the scheduler and exits. Exit status 0, or 2 on any error.

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "delayq/open.h"
#include "delayq/scheduler.h"

namespace {

int out_fd = -1;

void Record(const std::string& line) {
  // One write per line with O_APPEND: lines of concurrent threads never
  // interleave and nothing is buffered in the process.
  if (write(out_fd, line.data(), line.size()) !=
      static_cast<ssize_t>(line.size())) {
    perror("write");
    _exit(2);
  }
}

int Fail(const std::string& what, const absl::Status& status) {
  fprintf(stderr, "%s: %s\n", what.c_str(), status.ToString().c_str());
  return 2;
}

// Group g of PREFIX holds ids PREFIX-g-0 .. PREFIX-g-9 on topic
// topics[g % n]. A third of the groups are ready at once; the others are
// delayed by up to 2 s. Even groups go in one EnqueueBatch() call, odd ones
// job by job.
absl::Status EnqueueGroups(delayq::Scheduler& scheduler,
                           const std::string& prefix, int groups,
                           const std::vector<std::string>& topics,
                           int fixed_delay_ms, absl::Duration ttr,
                           const std::string& payload) {
  for (int g = 0; g < groups; ++g) {
    delayq::JobOptions options;
    options.ttr = ttr;
    options.delay = fixed_delay_ms >= 0
                        ? absl::Milliseconds(fixed_delay_ms)
                        : (g % 3 == 0 ? absl::ZeroDuration()
                                      : absl::Milliseconds((g * 7919) % 2000));
    const std::string& topic = topics[g % topics.size()];
    const std::string group_id = absl::StrCat(prefix, "-", g);
    if (g % 2 == 0) {
      std::vector<std::string> payloads(10, payload);
      options.id = group_id;
      absl::StatusOr<std::vector<std::string>> ids =
          scheduler.EnqueueBatch(topic, payloads, options);
      if (!ids.ok()) return ids.status();
    } else {
      for (int k = 0; k < 10; ++k) {
        options.id = absl::StrCat(group_id, "-", k);
        absl::StatusOr<std::string> id =
            scheduler.Enqueue(topic, payload, options);
        if (!id.ok()) return id.status();
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s URL OUT_FILE [key=value...]\n", argv[0]);
    return 2;
  }
  std::map<std::string, std::string> args;
  for (int i = 3; i < argc; ++i) {
    std::pair<std::string, std::string> kv =
        absl::StrSplit(argv[i], absl::MaxSplits('=', 1));
    args[kv.first] = kv.second;
  }
  auto number = [&](const std::string& key, int fallback) {
    int v = fallback;
    if (args.count(key) != 0 && !absl::SimpleAtoi(args[key], &v)) {
      fprintf(stderr, "bad number for %s\n", key.c_str());
      _exit(2);
    }
    return v;
  };
  const int threads = number("threads", 3);
  const int batch = number("batch", 1);
  const int poll_ms = number("poll_ms", 200);
  const int delay_ms = number("delay_ms", -1);
  const int ttr_ms = number("ttr_ms", 60000);
  const bool hang = args["hang"] == "1";

  out_fd = open(argv[2], O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (out_fd < 0) {
    perror("open");
    return 2;
  }
  absl::StatusOr<std::unique_ptr<delayq::Backend>> backend =
      delayq::OpenBackend(argv[1]);
  if (!backend.ok()) return Fail("open", backend.status());
  delayq::SchedulerOptions options;
  options.poll_interval = absl::Milliseconds(poll_ms);
  absl::StatusOr<std::unique_ptr<delayq::Scheduler>> scheduler =
      delayq::Scheduler::Create(*std::move(backend), options);
  if (!scheduler.ok()) return Fail("create", scheduler.status());

  std::vector<std::string> handled;
  if (!args["handle"].empty()) handled = absl::StrSplit(args["handle"], ',');
  const std::string pid = absl::StrCat(getpid());
  for (const std::string& topic : handled) {
    delayq::HandlerOptions handler_options;
    handler_options.concurrency = threads;
    handler_options.batch = batch;
    (*scheduler)
        ->Handle(
            topic,
            [hang, &pid](const delayq::Job& job) {
              if (hang && job.payload == "hang") {
                Record(absl::StrCat("begin ", job.id, " ", job.attempts, " ",
                                    pid, "\n"));
                for (;;) pause();  // until SIGKILL
              }
              Record(absl::StrCat("done ", job.id, " ", job.attempts, " ", pid,
                                  "\n"));
              return absl::OkStatus();
            },
            handler_options);
  }
  if (!handled.empty()) {
    absl::Status started = (*scheduler)->Start();
    if (!started.ok()) return Fail("start", started);
  }

  if (!args["enqueue"].empty()) {
    std::vector<std::string> parts =
        absl::StrSplit(args["enqueue"], absl::MaxSplits(':', 2));
    int groups = 0;
    if (parts.size() != 3 || !absl::SimpleAtoi(parts[1], &groups)) {
      fprintf(stderr, "bad enqueue=%s\n", args["enqueue"].c_str());
      return 2;
    }
    std::vector<std::string> topics = absl::StrSplit(parts[2], ',');
    absl::Status enqueued = EnqueueGroups(
        **scheduler, parts[0], groups, topics, delay_ms,
        absl::Milliseconds(ttr_ms),
        args.count("payload") != 0 ? args["payload"] : std::string("work"));
    if (!enqueued.ok()) return Fail("enqueue", enqueued);
  }
  if (handled.empty()) return 0;

  char buf[64];
  while (read(STDIN_FILENO, buf, sizeof(buf)) > 0) {
  }
  (*scheduler)->Stop(absl::Seconds(5));
  return 0;
}
