// Copyright delayq authors.
//
// A consumer process for the cross-process wake-up tests: one Scheduler on
// any store URL, with both poll intervals set to an hour, so that only the
// store's news can wake it within a test's patience.
//
//   wakeup_worker URL MODE TOPIC
//
//   MODE reserve  Reserve(TOPIC, 1h) in a loop, acking each job.
//   MODE handle   a Handle(TOPIC) worker thread.
//   MODE hold     Reserve(TOPIC, 1h) once and keep the lease without ever
//                 acking it (a stalled worker).
//
// Prints, one line each, flushed at once:
//   looked            the first store Reserve() of TOPIC found nothing: from
//                     here on only news (or an hour) can bring it a job
//   got ID MICROS     a job ran (reserve, handle) or is held (hold); MICROS
//                     is the time since the instant the job's payload
//                     carries (microseconds since the epoch)
//   error TEXT        and exit status 2
// Runs until its stdin reaches end of file.

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "delayq/delayq.h"

namespace {

void Say(const std::string& line) {
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
}

[[noreturn]] void Die(const absl::Status& status) {
  Say(absl::StrCat("error ", status.ToString()));
  std::_Exit(2);
}

// Says "looked" once, after the first Reserve() that found nothing.
class LookReporter : public delayq::BackendWrapper {
 public:
  explicit LookReporter(std::unique_ptr<delayq::Backend> target)
      : BackendWrapper(target.get()), owned_(std::move(target)) {}

  using Backend::Reserve;
  absl::StatusOr<std::vector<delayq::Lease>> Reserve(
      absl::string_view topic, int max, absl::Time now,
      std::vector<delayq::Transition>* moved) override {
    auto leases = BackendWrapper::Reserve(topic, max, now, moved);
    if (leases.ok() && leases->empty() && !looked_.exchange(true)) {
      Say("looked");
    }
    return leases;
  }

 private:
  std::unique_ptr<delayq::Backend> owned_;
  std::atomic<bool> looked_{false};
};

void Got(const delayq::Job& job) {
  int64_t sent = 0;
  if (!absl::SimpleAtoi(job.payload, &sent)) sent = 0;
  Say(absl::StrCat("got ", job.id, " ",
                   absl::ToUnixMicros(absl::Now()) - sent));
}

void WaitForEndOfInput() {
  char c;
  while (read(STDIN_FILENO, &c, 1) > 0) {
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr,
                 "usage: wakeup_worker URL reserve|handle|hold TOPIC\n");
    return 2;
  }
  const std::string url = argv[1], mode = argv[2], topic = argv[3];
  absl::StatusOr<std::unique_ptr<delayq::Backend>> store =
      delayq::OpenBackend(url);
  if (!store.ok()) Die(store.status());
  delayq::SchedulerOptions options;
  options.poll_interval = absl::Hours(1);
  options.news_poll_interval = absl::Hours(1);
  auto scheduler = delayq::Scheduler::Create(
      std::make_unique<LookReporter>(*std::move(store)), options);
  if (!scheduler.ok()) Die(scheduler.status());
  delayq::Scheduler& s = **scheduler;

  if (mode == "handle") {
    s.Handle(topic, [](const delayq::Job& job) {
      Got(job);
      return absl::OkStatus();
    });
    if (absl::Status st = s.Start(); !st.ok()) Die(st);
    WaitForEndOfInput();
    s.Stop(absl::Seconds(5));
    return 0;
  }
  if (mode != "reserve" && mode != "hold") {
    Die(absl::InvalidArgumentError(absl::StrCat("unknown mode ", mode)));
  }
  // End of input ends the process wherever the consumer is.
  std::thread([] {
    WaitForEndOfInput();
    std::_Exit(0);
  }).detach();
  for (;;) {
    absl::StatusOr<std::optional<delayq::Lease>> lease =
        s.Reserve(topic, absl::Hours(1));
    if (!lease.ok()) Die(lease.status());
    if (!lease->has_value()) continue;
    Got((*lease)->job);
    if (mode == "hold") break;
    if (absl::Status st = s.Ack(**lease); !st.ok()) Die(st);
  }
  WaitForEndOfInput();
  return 0;
}
