// Copyright delayq authors.
//
// worker — the helper process of every multi-process test. It opens any
// store by URL (delayq::OpenBackend()), as a program using delayq does, and
// does what the test tells it on stdin, one command a line; it answers on
// stdout, one line each, written whole with one write(2) (worker_output.h),
// so what it said before a SIGKILL can still be read.
//
//   worker URL [poll=DURATION] [news_poll=DURATION]
//
// The scheduler (opened on the first command that needs one) looks at the
// store on its own every `poll` and `news_poll` (both 1h unless given), so
// that by default only the store's news can wake it within a test's
// patience. DURATION as absl::ParseDuration() reads it: 200ms, 1h.
//
// On start the worker says "ready PID". Commands, and what they say:
//
//   enqueue PREFIX GROUPS TOPIC[,TOPIC...] [delay=D] [ttr=D] [payload=TEXT]
//       GROUPS groups of ten jobs, ids PREFIX-g-k (see EnqueueGroups());
//       without delay= a third are ready at once, the rest due within 2 s.
//       Then "ok enqueue".
//   handle TOPIC [threads=N] [batch=N] [hang=1]
//       a handler for TOPIC (before start); "ok handle".
//   schedule NAME TOPIC SPEC... [missed=skip|once|all:N]
//       Scheduler::Schedule() of NAME (the rest of the words are the spec,
//       "@every 1s" or a cron line) with an empty payload; "ok schedule".
//   start
//       starts the scheduler's workers (and its timer thread, which runs
//       the schedules); "ok start".
//   reserve TOPIC | hold TOPIC
//       a thread that Reserve()s TOPIC with an hour's wait and acks each
//       job, or (hold) keeps the first lease forever; "ok reserve".
//   work THREADS JOBS TOPICS TAG      (store level, worker_store_commands.h)
//       says "P ID" per job added, "R ID TOKEN NOW_US DEADLINE_US" per
//       lease, "A ID TOKEN CODE" per Ack() (CODE 0: OK); then "ok work".
//   churn TAG                         (store level, until killed)
//       "P", "R" as above, "I ID TOKEN" just before an Ack(), "A ID TOKEN 0".
//   drain THREADS TOPIC[,TOPIC...]    (store level)
//       "acked ID" per job acknowledged; "ok drain" when the topics stay
//       empty.
//   ackat TOPIC AT_US                 (store level)
//       reserves one job, acks it at AT_US (µs since the epoch): "R", "I",
//       "A" as above; then "ok ackat".
//   closeat BATCH AT_US               (store level)
//       "C BATCH" at AT_US, closes the batch, "closed BATCH"; "ok closeat".
//   subscribe
//       subscribes to the store's news on a connection of its own;
//       "ok subscribe".
//   quit, or end of input
//       stops the scheduler's workers (5 s grace) and exits 0.
//
// Whenever it happens, from a scheduler's threads:
//   looked               the first Reserve() at the store found nothing
//   got ID ATTEMPTS US   a handler ran a job, or reserve/hold leased it; US
//                        is the time since the instant a numeric payload
//                        carries (microseconds since the epoch), else 0
//   begin ID ATTEMPTS    a hang=1 handler took a job with payload "hang"
// And on any failure "error TEXT", then exit status 2.

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "tests/testing/worker_output.h"
#include "tests/testing/worker_scheduler_commands.h"
#include "tests/testing/worker_store_commands.h"

namespace delayq {
namespace worker {
namespace {

// A command line: positional words, then key=value options.
struct Command {
  std::vector<std::string> words;
  std::map<std::string, std::string> options;

  const std::string& Word(size_t i) const {
    if (i >= words.size()) {
      Die(words.empty() ? "command" : words[0],
          absl::InvalidArgumentError("missing argument"));
    }
    return words[i];
  }
  int Int(size_t i) const { return ToInt(Word(i)); }
  int64_t Int64(size_t i) const {
    int64_t n = 0;
    if (!absl::SimpleAtoi(Word(i), &n)) {
      Die("number", absl::InvalidArgumentError(Word(i)));
    }
    return n;
  }
  int IntOption(const std::string& key, int fallback) const {
    auto it = options.find(key);
    return it == options.end() ? fallback : ToInt(it->second);
  }
  absl::Duration DurationOption(const std::string& key,
                                absl::Duration fallback) const {
    auto it = options.find(key);
    return it == options.end() ? fallback : ToDuration(it->second);
  }

  static int ToInt(const std::string& text) {
    int n = 0;
    if (!absl::SimpleAtoi(text, &n)) {
      Die("number", absl::InvalidArgumentError(text));
    }
    return n;
  }
  static absl::Duration ToDuration(const std::string& text) {
    absl::Duration d;
    if (!absl::ParseDuration(text, &d)) {
      Die("duration", absl::InvalidArgumentError(text));
    }
    return d;
  }
};

Command Parse(const std::string& line) {
  Command command;
  for (absl::string_view part : absl::StrSplit(line, ' ', absl::SkipEmpty())) {
    const size_t eq = part.find('=');
    if (eq == absl::string_view::npos) {
      command.words.emplace_back(part);
    } else {
      command.options[std::string(part.substr(0, eq))] =
          std::string(part.substr(eq + 1));
    }
  }
  return command;
}

class Worker {
 public:
  Worker(std::string url, const Command& args)
      : url_(std::move(url)),
        poll_(args.DurationOption("poll", absl::Hours(1))),
        news_poll_(args.DurationOption("news_poll", absl::Hours(1))) {}

  // Runs one command; false for quit.
  bool Run(const Command& c) {
    const std::string& name = c.Word(0);
    if (name == "quit") return false;
    if (name == "enqueue") {
      Enqueue(c);
    } else if (name == "handle") {
      HandleTopic(scheduler(), c.Word(1), c.IntOption("threads", 1),
                  c.IntOption("batch", 1), c.IntOption("hang", 0) == 1);
    } else if (name == "schedule") {
      Schedule(c);
    } else if (name == "start") {
      if (absl::Status s = scheduler().Start(); !s.ok()) Die("start", s);
      started_ = true;
    } else if (name == "reserve" || name == "hold") {
      ReserveLoop(scheduler(), c.Word(1), name == "hold");
    } else if (name == "work") {
      Work(url_, c.Int(1), c.Int(2), c.Int(3), c.Word(4));
    } else if (name == "churn") {
      Churn(url_, c.Word(1));
    } else if (name == "drain") {
      Drain(url_, c.Int(1), absl::StrSplit(c.Word(2), ','));
    } else if (name == "ackat") {
      AckAt(url_, c.Word(1), c.Int64(2));
    } else if (name == "closeat") {
      CloseAt(url_, c.Word(1), c.Int64(2));
    } else if (name == "subscribe") {
      Subscribe(url_);
    } else {
      Die(name, absl::InvalidArgumentError("unknown command"));
    }
    Say("ok " + name);
    return true;
  }

  // Stops the workers; other threads (reserve, hold) end with the process.
  [[noreturn]] void Quit() {
    if (started_) scheduler_->Stop(absl::Seconds(5));
    std::_Exit(0);
  }

 private:
  Scheduler& scheduler() {
    if (scheduler_ == nullptr) {
      auto opened = OpenLookingScheduler(url_, poll_, news_poll_);
      if (!opened.ok()) Die("open", opened.status());
      scheduler_ = *std::move(opened);
    }
    return *scheduler_;
  }

  void Enqueue(const Command& c) {
    EnqueueSpec spec;
    spec.prefix = c.Word(1);
    spec.groups = c.Int(2);
    spec.topics = absl::StrSplit(c.Word(3), ',');
    spec.delay = c.DurationOption("delay", absl::InfiniteDuration());
    spec.ttr = c.DurationOption("ttr", absl::Seconds(60));
    if (auto it = c.options.find("payload"); it != c.options.end()) {
      spec.payload = it->second;
    }
    if (absl::Status s = EnqueueGroups(scheduler(), spec); !s.ok()) {
      Die("enqueue", s);
    }
  }

  void Schedule(const Command& c) {
    const std::string& name = c.Word(1);
    const std::string& topic = c.Word(2);
    c.Word(3);  // a spec has at least one word
    const std::vector<std::string> spec(c.words.begin() + 3, c.words.end());
    ScheduleOptions options;
    auto missed = c.options.find("missed");
    if (missed != c.options.end() &&
        !ParseMissedPolicy(missed->second, &options.missed)) {
      Die("schedule", absl::InvalidArgumentError(missed->second));
    }
    absl::Status s = scheduler().Schedule(name, absl::StrJoin(spec, " "), topic,
                                          "", options);
    if (!s.ok()) Die("schedule", s);
  }

  const std::string url_;
  const absl::Duration poll_;
  const absl::Duration news_poll_;
  std::unique_ptr<Scheduler> scheduler_;
  bool started_ = false;
};

}  // namespace
}  // namespace worker
}  // namespace delayq

int main(int argc, char** argv) {
  using delayq::worker::Command;
  if (argc < 2) {
    std::fprintf(stderr, "usage: worker URL [key=value...]\n");
    return 2;
  }
  Command args;
  for (int i = 2; i < argc; ++i) {
    Command one = delayq::worker::Parse(argv[i]);
    args.options.insert(one.options.begin(), one.options.end());
  }
  delayq::worker::Worker worker(argv[1], args);
  delayq::worker::Say(absl::StrCat("ready ", getpid()));
  std::string line;
  while (std::getline(std::cin, line)) {
    const Command command = delayq::worker::Parse(line);
    if (command.words.empty()) continue;
    if (!worker.Run(command)) break;
  }
  worker.Quit();
}
