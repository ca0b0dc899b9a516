// Copyright delayq authors.

#include "tests/testing/worker_store_commands.h"

#include <functional>
#include <memory>
#include <random>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "delayq/open.h"
#include "tests/testing/worker_output.h"

namespace delayq {
namespace worker {
namespace {

constexpr absl::Duration kWorkTtr = absl::Milliseconds(300);

std::unique_ptr<Backend> OpenOrDie(const std::string& url) {
  absl::StatusOr<std::unique_ptr<Backend>> store = OpenBackend(url);
  if (!store.ok()) Die("open", store.status());
  return *std::move(store);
}

NewJob MakeJob(const std::string& id, const std::string& topic,
               absl::Duration ttr, absl::Time now) {
  NewJob job;
  job.id = id;
  job.topic = topic;
  job.payload = "payload of " + id;
  job.run_at = now;
  job.ttr = ttr;
  job.max_attempts = 1000;  // redeliveries must never kill a job here
  return job;
}

void SayReserved(const Lease& lease, absl::Time now) {
  Say(absl::StrCat("R ", lease.job.id, " ", lease.token, " ",
                   absl::ToUnixMicros(now), " ",
                   absl::ToUnixMicros(lease.deadline)));
}

// One consumer step of Work(): reserves up to three jobs of `topic`, holds
// one in fifty past its ttr, acks each. Returns whether it got any.
bool ConsumeSome(Backend& store, const std::string& topic, std::mt19937& rng) {
  const absl::Time now = absl::Now();
  auto leases = store.Reserve(topic, 1 + rng() % 3, now);
  if (!leases.ok()) Die("reserve", leases.status());
  for (const Lease& lease : *leases) SayReserved(lease, now);
  for (const Lease& lease : *leases) {
    if (rng() % 50 == 0) absl::SleepFor(kWorkTtr + absl::Milliseconds(50));
    const absl::Status acked =
        store.Ack(lease.job.id, lease.token, /*result=*/"", absl::Now());
    if (!acked.ok() && !absl::IsFailedPrecondition(acked)) Die("ack", acked);
    Say(absl::StrCat("A ", lease.job.id, " ", lease.token, " ",
                     static_cast<int>(acked.code())));
  }
  return !leases->empty();
}

void WorkThread(const std::string& url, int t, int jobs, int topics,
                const std::string& tag) {
  std::unique_ptr<Backend> store = OpenOrDie(url);
  std::mt19937 rng(std::hash<std::string>()(tag) + t);
  int produced = 0;
  int idle = 0;
  while (produced < jobs || idle < 20) {
    if (produced < jobs && rng() % 2 == 0) {
      const std::string id = absl::StrCat(tag, "-", t, "-", produced++);
      const std::string topic = absl::StrCat("mp", rng() % topics);
      const absl::Status added =
          store->Add({MakeJob(id, topic, kWorkTtr, absl::Now())}, absl::Now());
      if (!added.ok()) Die("add", added);
      Say("P " + id);
      continue;
    }
    const bool got =
        ConsumeSome(*store, absl::StrCat("mp", rng() % topics), rng);
    if (produced == jobs) {
      idle = got ? 0 : idle + 1;
      if (!got) absl::SleepFor(absl::Milliseconds(5));
    }
  }
}

// Acks `leases`, several in one call (one transaction or script call where
// the store has one); any refusal is an error here (leases are long and
// nobody else holds them).
void AckAll(Backend& store, const std::vector<Lease>& leases) {
  if (leases.size() > 1) {
    auto acks = store.AckBatch(leases, absl::Now());
    if (!acks.ok()) Die("ack batch", acks.status());
    for (size_t i = 0; i < leases.size(); ++i) {
      if (!(*acks)[i].ok()) Die("ack " + leases[i].job.id, (*acks)[i]);
    }
    return;
  }
  for (const Lease& lease : leases) {
    const absl::Status acked =
        store.Ack(lease.job.id, lease.token, /*result=*/"", absl::Now());
    if (!acked.ok()) Die("ack " + lease.job.id, acked);
  }
}

void DrainThread(Backend& store, int t,
                 const std::vector<std::string>& topics) {
  const int batch = t % 2 == 1 ? 5 : 1;
  for (int empty_rounds = 0; empty_rounds < 3;) {
    bool got_any = false;
    for (const std::string& topic : topics) {
      auto leases = store.Reserve(topic, batch, absl::Now());
      if (!leases.ok()) Die("reserve", leases.status());
      if (leases->empty()) continue;
      got_any = true;
      AckAll(store, *leases);
      for (const Lease& lease : *leases) Say("acked " + lease.job.id);
    }
    empty_rounds = got_any ? 0 : empty_rounds + 1;
  }
}

}  // namespace

void Work(const std::string& url, int threads, int jobs, int topics,
          const std::string& tag) {
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back(WorkThread, url, t, jobs, topics, tag);
  }
  for (std::thread& t : pool) t.join();
  Say("worked");
}

void Churn(const std::string& url, const std::string& tag) {
  std::unique_ptr<Backend> store = OpenOrDie(url);
  std::mt19937 rng(std::hash<std::string>()(tag));
  for (int i = 0;; ++i) {
    const absl::Time now = absl::Now();
    std::vector<NewJob> jobs;
    for (int j = 0, n = 1 + rng() % 20; j < n; ++j) {
      jobs.push_back(MakeJob(absl::StrCat(tag, "-", i, "-", j), "crash",
                             absl::Seconds(1), now));
    }
    const absl::Status added = store->Add(jobs, now);
    if (!added.ok()) Die("add", added);
    for (const NewJob& job : jobs) Say("P " + job.id);
    auto leases = store->Reserve("crash", 1 + rng() % 20, now);
    if (!leases.ok()) Die("reserve", leases.status());
    for (const Lease& lease : *leases) {
      SayReserved(lease, now);
      if (rng() % 4 == 0) continue;  // left reserved: the lease must expire
      // A kill between this line and the next leaves the job either way.
      Say(absl::StrCat("I ", lease.job.id, " ", lease.token));
      const absl::Status acked =
          store->Ack(lease.job.id, lease.token, /*result=*/"", now);
      if (!acked.ok()) Die("ack", acked);
      Say(absl::StrCat("A ", lease.job.id, " ", lease.token, " 0"));
    }
  }
}

void Drain(const std::string& url, int threads,
           const std::vector<std::string>& topics) {
  std::unique_ptr<Backend> store = OpenOrDie(url);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back(DrainThread, std::ref(*store), t, std::cref(topics));
  }
  for (std::thread& t : pool) t.join();
  Say("drained");
}

namespace {

void SleepUntilMicros(int64_t at_us) {
  absl::SleepFor(absl::FromUnixMicros(at_us) - absl::Now());
}

}  // namespace

void AckAt(const std::string& url, const std::string& topic, int64_t at_us) {
  std::unique_ptr<Backend> store = OpenOrDie(url);
  const absl::Time give_up = absl::Now() + absl::Seconds(10);
  std::vector<Lease> leases;
  while (leases.empty()) {
    if (absl::Now() > give_up) {
      Die("ackat", absl::DeadlineExceededError("no job to reserve"));
    }
    const absl::Time now = absl::Now();
    auto reserved = store->Reserve(topic, 1, now);
    if (!reserved.ok()) Die("reserve", reserved.status());
    leases = *std::move(reserved);
    if (leases.empty()) absl::SleepFor(absl::Milliseconds(5));
    for (const Lease& lease : leases) SayReserved(lease, now);
  }
  const Lease& lease = leases[0];
  SleepUntilMicros(at_us);
  Say(absl::StrCat("I ", lease.job.id, " ", lease.token));
  const absl::Status acked =
      store->Ack(lease.job.id, lease.token, /*result=*/"", absl::Now());
  Say(absl::StrCat("A ", lease.job.id, " ", lease.token, " ",
                   static_cast<int>(acked.code())));
}

void CloseAt(const std::string& url, const std::string& batch, int64_t at_us) {
  std::unique_ptr<Backend> store = OpenOrDie(url);
  SleepUntilMicros(at_us);
  Say("C " + batch);
  const absl::Status closed = store->CloseBatch(batch, absl::Now());
  if (!closed.ok()) Die("closeat", closed);
  Say("closed " + batch);
}

void Subscribe(const std::string& url) {
  // Leaked on purpose: the subscription lasts as long as the process.
  Backend* store = OpenOrDie(url).release();
  auto subscription = store->Subscribe([](const StoreNews&) {});
  if (!subscription.ok()) Die("subscribe", subscription.status());
  subscription->release();
  Say("subscribed");
}

}  // namespace worker
}  // namespace delayq
