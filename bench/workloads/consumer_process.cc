// Copyright delayq authors.

#include "bench/workloads/consumer_process.h"

#include <atomic>
#include <cstdio>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "bench/workloads/common.h"

namespace delayq {
namespace bench {
namespace {

absl::Mutex say_mu;

void Say(const std::string& line) {
  absl::MutexLock lock(&say_mu);
  std::fwrite(line.data(), 1, line.size(), stdout);
  std::fputc('\n', stdout);
  std::fflush(stdout);
}

int RunHandler(Scheduler& scheduler, const ConsumerArgs& args) {
  Tally tally(args.n);
  std::atomic<int64_t> first{0};
  HandlerOptions options;
  options.concurrency = args.concurrency;
  scheduler.Handle(
      args.topic,
      [&](const Job& job) {
        const absl::Time now = absl::Now();
        const int64_t i = ParseIndex(job.payload);
        Say(absl::StrCat("d ", i, " ", absl::ToUnixMicros(now)));
        if (tally.Deliver(i) == 1) first.fetch_add(1);
        return absl::OkStatus();
      },
      options);
  Say("ready");
  std::string go;
  for (int c = std::getchar(); c != EOF && c != '\n'; c = std::getchar()) {
    go.push_back(static_cast<char>(c));
  }
  if (go != "go") return 2;  // the producer went away
  if (absl::Status s = scheduler.Start(); !s.ok()) {
    std::fprintf(stderr, "start: %s\n", s.ToString().c_str());
    return 2;
  }
  Say("started");
  while (first.load() < args.n && absl::Now() < args.give_up) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  absl::SleepFor(args.linger);
  scheduler.Stop(absl::Seconds(5));
  Say("end");
  return 0;
}

int RunConsume(Scheduler& scheduler, const ConsumerArgs& args) {
  Tally tally(args.n);
  std::atomic<int64_t> done{0};
  ConsumeResult result;
  {
    Progress progress("consume", args.n, &done);
    result = Consume(scheduler, args.topic, args.concurrency, args.batch,
                     args.role == "consume_chained", tally, done);
  }
  if (!result.error.ok()) {
    std::fprintf(stderr, "consume: %s\n", result.error.ToString().c_str());
    return 2;
  }
  Say(absl::StrCat("consumed ", tally.delivered(), " ",
                   absl::ToInt64Nanoseconds(result.elapsed), " ",
                   tally.Duplicates(), " ", tally.Missing(), " ",
                   result.ack_errors));
  return 0;
}

}  // namespace

int RunConsumerRole(const WorkloadConfig& config, const ConsumerArgs& args) {
  absl::StatusOr<std::unique_ptr<Scheduler>> scheduler = OpenScheduler(config);
  if (!scheduler.ok()) {
    std::fprintf(stderr, "open %s: %s\n", config.store_url.c_str(),
                 scheduler.status().ToString().c_str());
    return 2;
  }
  if (args.role == "handler") return RunHandler(**scheduler, args);
  if (args.role == "consume" || args.role == "consume_chained") {
    return RunConsume(**scheduler, args);
  }
  std::fprintf(stderr, "unknown --role=%s\n", args.role.c_str());
  return 2;
}

absl::StatusOr<std::unique_ptr<ConsumerProcess>> ConsumerProcess::Start(
    const WorkloadConfig& config, const ConsumerArgs& args) {
  std::vector<std::string> argv = {
      "/proc/self/exe",
      absl::StrCat("--store=", config.store_url),
      absl::StrCat("--role=", args.role),
      absl::StrCat("--role_topic=", args.topic),
      absl::StrCat("--n=", args.n),
      absl::StrCat("--concurrency=", args.concurrency),
      absl::StrCat("--batch=", args.batch),
      absl::StrCat("--event_log=", config.event_log ? "true" : "false"),
      absl::StrCat("--role_linger_ms=", absl::ToInt64Milliseconds(args.linger)),
      absl::StrCat("--role_give_up_unix_ms=",
                   args.give_up == absl::InfiniteFuture()
                       ? int64_t{0}
                       : absl::ToUnixMillis(args.give_up)),
  };
  std::unique_ptr<ConsumerProcess> process(new ConsumerProcess(argv));
  if (!process->child_.started()) {
    return absl::InternalError("could not start the consumer process");
  }
  if (args.role == "handler") {
    if (absl::Status s = process->Expect("ready", absl::Seconds(30)); !s.ok()) {
      return s;
    }
  }
  return process;
}

absl::Status ConsumerProcess::Expect(const std::string& want,
                                     absl::Duration patience) {
  absl::StatusOr<std::string> line = ReadLine(patience);
  if (!line.ok()) return line.status();
  if (*line != want) {
    return absl::InternalError(
        absl::StrCat("consumer said '", *line, "' instead of ", want));
  }
  return absl::OkStatus();
}

absl::Status ConsumerProcess::Tell(const std::string& line) {
  if (!child_.WriteLine(line)) {
    return absl::InternalError("the consumer process went away");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ConsumerProcess::ReadLine(absl::Duration patience) {
  std::optional<std::string> line = child_.ReadLine(patience);
  if (!line) {
    return absl::InternalError(
        "the consumer process died or fell silent (its stderr is above)");
  }
  return *std::move(line);
}

absl::StatusOr<std::vector<std::vector<absl::Time>>>
ConsumerProcess::Deliveries(int64_t n, absl::Duration patience) {
  std::vector<std::vector<absl::Time>> times(n);
  for (;;) {
    absl::StatusOr<std::string> line = ReadLine(patience);
    if (!line.ok()) return line.status();
    if (*line == "end") return times;
    std::vector<absl::string_view> f = absl::StrSplit(*line, ' ');
    int64_t i, micros;
    if (f.size() != 3 || f[0] != "d" || !absl::SimpleAtoi(f[1], &i) ||
        !absl::SimpleAtoi(f[2], &micros)) {
      return absl::InternalError(absl::StrCat("consumer said '", *line, "'"));
    }
    if (i >= 0 && i < n) times[i].push_back(absl::FromUnixMicros(micros));
  }
}

FirstDeliveries Summarize(const std::vector<std::vector<absl::Time>>& times,
                          const std::vector<absl::Time>& since) {
  FirstDeliveries out;
  for (size_t i = 0; i < times.size(); ++i) {
    if (times[i].empty()) {
      ++out.missing;
      continue;
    }
    ++out.delivered;
    if (times[i].size() > 1) ++out.duplicates;
    out.ms.push_back(absl::ToDoubleMilliseconds(times[i][0] - since[i]));
  }
  return out;
}

absl::StatusOr<std::unique_ptr<HandlerRun>> HandlerRun::Prepare(
    const WorkloadConfig& config, Scheduler& scheduler,
    const ConsumerArgs& args) {
  std::unique_ptr<HandlerRun> run(new HandlerRun(scheduler, args));
  if (config.two_process) {
    ConsumerArgs handler = args;
    handler.role = "handler";
    absl::StatusOr<std::unique_ptr<ConsumerProcess>> process =
        ConsumerProcess::Start(config, handler);
    if (!process.ok()) return process.status();
    run->process_ = *std::move(process);
    return run;
  }
  HandlerOptions options;
  options.concurrency = args.concurrency;
  HandlerRun* self = run.get();
  scheduler.Handle(
      args.topic,
      [self](const Job& job) {
        const absl::Time now = absl::Now();
        const int64_t i = ParseIndex(job.payload);
        absl::MutexLock lock(&self->mu_);
        if (i < 0 || i >= self->args_.n) return absl::OkStatus();
        self->times_[i].push_back(now);
        if (self->times_[i].size() == 1) ++self->first_;
        return absl::OkStatus();
      },
      options);
  return run;
}

absl::Status HandlerRun::Start() {
  if (process_ == nullptr) return scheduler_.Start();
  if (absl::Status s = process_->Tell("go"); !s.ok()) return s;
  if (absl::Status s = process_->Expect("started", absl::Seconds(30));
      !s.ok()) {
    return s;
  }
  reader_ = std::thread([this] {
    read_ = process_->Deliveries(
        args_.n, args_.give_up - absl::Now() + absl::Minutes(1));
  });
  return absl::OkStatus();
}

HandlerRun::~HandlerRun() {
  if (process_ == nullptr) {
    scheduler_.Stop(absl::Seconds(5));
    return;
  }
  if (reader_.joinable()) {
    process_->Kill();  // the reader sees the end of its output
    reader_.join();
  }
}

absl::StatusOr<FirstDeliveries> HandlerRun::Finish(
    const std::vector<absl::Time>& since) {
  if (process_ != nullptr) {
    if (!reader_.joinable()) {
      return absl::FailedPreconditionError("HandlerRun: not started");
    }
    reader_.join();
    if (!read_.ok()) return read_.status();
    return Summarize(*read_, since);
  }
  {
    absl::MutexLock lock(&mu_);
    auto all_in = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return first_ >= args_.n;
    };
    mu_.AwaitWithDeadline(absl::Condition(&all_in), args_.give_up);
  }
  absl::SleepFor(args_.linger);
  scheduler_.Stop(absl::Seconds(5));
  absl::MutexLock lock(&mu_);
  return Summarize(times_, since);
}

}  // namespace bench
}  // namespace delayq
