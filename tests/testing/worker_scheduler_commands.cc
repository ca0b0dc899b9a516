// Copyright delayq authors.

#include "tests/testing/worker_scheduler_commands.h"

#include <unistd.h>

#include <atomic>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "delayq/open.h"
#include "tests/testing/worker_output.h"

namespace delayq {
namespace worker {
namespace {

// Says "looked" once, after the first Reserve() that found nothing.
class LookReporter : public BackendWrapper {
 public:
  explicit LookReporter(std::unique_ptr<Backend> target)
      : BackendWrapper(target.get()), owned_(std::move(target)) {}

  using Backend::Reserve;
  absl::StatusOr<std::vector<Lease>> Reserve(absl::string_view topic, int max,
                                             absl::Time now,
                                             ReserveReport* report) override {
    auto leases = BackendWrapper::Reserve(topic, max, now, report);
    if (leases.ok() && leases->empty() && !looked_.exchange(true)) {
      Say("looked");
    }
    return leases;
  }

 private:
  std::unique_ptr<Backend> owned_;
  std::atomic<bool> looked_{false};
};

// "got ID ATTEMPTS MICROS": MICROS is the time since the instant a numeric
// payload carries (microseconds since the epoch), else 0.
void SayGot(const Job& job) {
  int64_t sent = 0;
  const int64_t micros = absl::SimpleAtoi(job.payload, &sent)
                             ? absl::ToUnixMicros(absl::Now()) - sent
                             : 0;
  Say(absl::StrCat("got ", job.id, " ", job.attempts, " ", micros));
}

absl::Duration GroupDelay(const EnqueueSpec& spec, int g) {
  if (spec.delay != absl::InfiniteDuration()) return spec.delay;
  return g % 3 == 0 ? absl::ZeroDuration()
                    : absl::Milliseconds((g * 7919) % 2000);
}

}  // namespace

absl::StatusOr<std::unique_ptr<Scheduler>> OpenLookingScheduler(
    const std::string& url, absl::Duration poll, absl::Duration news_poll) {
  absl::StatusOr<std::unique_ptr<Backend>> store = OpenBackend(url);
  if (!store.ok()) return store.status();
  SchedulerOptions options;
  options.poll_interval = poll;
  options.news_poll_interval = news_poll;
  return Scheduler::Create(std::make_unique<LookReporter>(*std::move(store)),
                           options);
}

absl::Status EnqueueGroups(Scheduler& scheduler, const EnqueueSpec& spec) {
  for (int g = 0; g < spec.groups; ++g) {
    JobOptions options;
    options.ttr = spec.ttr;
    options.delay = GroupDelay(spec, g);
    const std::string& topic = spec.topics[g % spec.topics.size()];
    const std::string group_id = absl::StrCat(spec.prefix, "-", g);
    if (g % 2 == 0) {
      options.id = group_id;
      const std::vector<std::string> payloads(10, spec.payload);
      auto ids = scheduler.EnqueueBatch(topic, payloads, options);
      if (!ids.ok()) return ids.status();
      continue;
    }
    for (int k = 0; k < 10; ++k) {
      options.id = absl::StrCat(group_id, "-", k);
      auto id = scheduler.Enqueue(topic, spec.payload, options);
      if (!id.ok()) return id.status();
    }
  }
  return absl::OkStatus();
}

void HandleTopic(Scheduler& scheduler, const std::string& topic, int threads,
                 int batch, bool hang) {
  HandlerOptions options;
  options.concurrency = threads;
  options.batch = batch;
  scheduler.Handle(
      topic,
      [hang](const Job& job) {
        if (hang && job.payload == "hang") {
          Say(absl::StrCat("begin ", job.id, " ", job.attempts));
          for (;;) pause();  // until SIGKILL
        }
        SayGot(job);
        return absl::OkStatus();
      },
      options);
}

void ReserveLoop(Scheduler& scheduler, const std::string& topic, bool hold) {
  std::thread([&scheduler, topic, hold] {
    for (;;) {
      absl::StatusOr<std::optional<Lease>> lease =
          scheduler.Reserve(topic, absl::Hours(1));
      if (!lease.ok()) Die("reserve", lease.status());
      if (!lease->has_value()) continue;
      SayGot((*lease)->job);
      if (hold) return;
      if (absl::Status acked = scheduler.Ack(**lease); !acked.ok()) {
        Die("ack", acked);
      }
    }
  }).detach();
}

}  // namespace worker
}  // namespace delayq
