// Copyright delayq authors.

#include "tests/testing/batch_rounds.h"

#include <cstdio>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/worker_process.h"

namespace delayq {
namespace testing {
namespace {

constexpr char kDoneTopic[] = "batchdone";

// What the processes of one round said they did.
struct Said {
  std::set<std::string> acking;  // "I": an Ack() began
  std::set<std::string> acked;   // "A ... 0": it returned OK
  bool closing = false;          // "C": the close began
  bool closed = false;           // "closed": it returned OK
};

void Read(const std::vector<std::string>& lines, Said& said) {
  for (const std::string& line : lines) {
    const std::vector<std::string> w = absl::StrSplit(line, ' ');
    if (w.size() >= 2 && w[0] == "I") said.acking.insert(w[1]);
    if (w.size() == 4 && w[0] == "A" && w[3] == "0") said.acked.insert(w[1]);
    if (w[0] == "C") said.closing = true;
    if (w[0] == "closed") said.closed = true;
  }
}

// The batch as the round left it, before anything else touched the store.
void CheckLeft(Backend& store, const std::string& batch,
               const std::vector<std::string>& jobs, const Said& said,
               bool closed_first, int round) {
  SCOPED_TRACE(absl::StrCat("round ", round));
  int gone = 0;
  for (const std::string& id : jobs) {
    absl::StatusOr<Job> job = store.Get(id);
    if (absl::IsNotFound(job.status())) {
      ++gone;
      EXPECT_TRUE(said.acking.count(id)) << "left without an ack: " << id;
    } else {
      ASSERT_OK(job.status());
      EXPECT_FALSE(said.acked.count(id)) << "acked job still there: " << id;
    }
  }
  ASSERT_OK_AND_ASSIGN(Batch b, store.GetBatch(batch));
  EXPECT_EQ(b.total, static_cast<int64_t>(jobs.size()));
  EXPECT_EQ(b.done, gone) << "each job that left counted done once";
  EXPECT_EQ(b.dead + b.cancelled, 0);
  if (closed_first || said.closed) {
    EXPECT_TRUE(b.closed);
  }
  if (!closed_first && !said.closing) {
    EXPECT_FALSE(b.closed);
  }
  ASSERT_OK_AND_ASSIGN(Job completion, store.Get(batch));
  EXPECT_EQ(completion.state,
            b.complete() ? JobState::kReady : JobState::kWaiting);
}

// Ends what the round left and checks the completion job came once.
void Finish(Backend& store, const std::string& batch, const std::string& topic,
            int jobs, int round) {
  SCOPED_TRACE(absl::StrCat("round ", round));
  // Past every lease the killed processes held (ttr 1 s). A row a killed
  // process had locked stays locked until the server sees it gone, and a
  // reservation skips locked rows (PostgreSQL's SKIP LOCKED): look again
  // until every job was acked, for a while.
  absl::Time later = absl::Now() + absl::Seconds(2);
  const absl::Time give_up = absl::Now() + absl::Seconds(30);
  for (;;) {
    ASSERT_OK_AND_ASSIGN(std::vector<Lease> rest,
                         store.Reserve(topic, jobs, later));
    for (const Lease& l : rest) {
      ASSERT_OK(store.Ack(l.job.id, l.token, /*result=*/"", later));
    }
    ASSERT_OK_AND_ASSIGN(TopicStats left, store.Stats(topic));
    if (left.total() == 0 || absl::Now() > give_up) break;
    absl::SleepFor(absl::Milliseconds(50));
    later = absl::Now() + absl::Seconds(2);
  }
  ASSERT_OK(store.CloseBatch(batch, later));
  ASSERT_OK_AND_ASSIGN(Batch b, store.GetBatch(batch));
  EXPECT_EQ(b.done, jobs);
  EXPECT_TRUE(b.complete());
  ASSERT_OK_AND_ASSIGN(TopicStats stats, store.Stats(kDoneTopic));
  EXPECT_EQ(stats.total(), 1) << "one completion job, this round's";
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> done,
                       store.Reserve(kDoneTopic, 10, later));
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].job.id, batch);
  ASSERT_OK(store.Ack(batch, done[0].token, /*result=*/"", later));
  EXPECT_THAT(store.GetBatch(batch), StatusIs(absl::StatusCode::kNotFound));
}

}  // namespace

void RunBatchRounds(const BatchRounds& test) {
  std::mt19937 rng(20261129);
  int released_by_a_process = 0, killed_mid_step = 0;
  for (int round = 0; round < test.rounds; ++round) {
    // The jobs' ids carry the batch's hash tag: a sharded store keeps a
    // batch's jobs on its shard.
    const std::string batch = absl::StrCat("{batch-", round, "}");
    const std::string topic = absl::StrCat("batchwork", round);
    const bool closed_first = round % 2 == 1;
    std::vector<std::string> jobs;
    {
      std::unique_ptr<Backend> store = test.open();
      ASSERT_NE(store, nullptr);
      const absl::Time now = absl::Now();
      NewJob completion;
      completion.id = batch;
      completion.topic = kDoneTopic;
      completion.run_at = now;
      ASSERT_OK(store->OpenBatch(completion, now));
      std::vector<NewJob> added;
      for (int k = 0; k < test.processes; ++k) {
        NewJob job;
        job.id = absl::StrCat(batch, "-", k);
        job.topic = topic;
        job.run_at = now;
        job.ttr = absl::Seconds(1);
        job.batch = batch;
        added.push_back(job);
        jobs.push_back(job.id);
      }
      ASSERT_OK(store->Add(added, now));
      if (closed_first) {
        ASSERT_OK(store->CloseBatch(batch, now));
      }
    }
    std::vector<std::unique_ptr<WorkerProcess>> children;
    for (int k = 0; k < test.processes + (closed_first ? 0 : 1); ++k) {
      children.push_back(WorkerProcess::Start(test.url));
      ASSERT_NE(children.back(), nullptr);
    }
    // Late enough for every process to have reserved its job.
    const absl::Time at = absl::Now() + absl::Milliseconds(300);
    const int64_t at_us = absl::ToUnixMicros(at);
    for (int k = 0; k < test.processes; ++k) {
      ASSERT_TRUE(children[k]->Send(absl::StrCat("ackat ", topic, " ", at_us)));
    }
    if (!closed_first) {
      ASSERT_TRUE(
          children.back()->Send(absl::StrCat("closeat ", batch, " ", at_us)));
    }
    Said said;
    if (test.kill) {
      // From a little before the instant to a few milliseconds after it.
      absl::SleepFor(at - absl::Now() +
                     absl::Microseconds(static_cast<int>(rng() % 4000) - 500));
      for (auto& child : children) child->Kill();
      for (auto& child : children) {
        child->Collect(absl::Seconds(5));
        Read(child->lines(), said);
      }
    } else {
      for (auto& child : children) {
        ASSERT_TRUE(child->NextStartingWith("ok ", absl::Seconds(30)))
            << "round " << round;
        child->Finish();
        Read(child->lines(), said);
      }
    }
    if (said.acking.size() > said.acked.size() || said.closing != said.closed) {
      ++killed_mid_step;
    }
    ASSERT_EQ(test.check_after_round(), "") << "round " << round;
    std::unique_ptr<Backend> store = test.open();
    ASSERT_NE(store, nullptr);
    CheckLeft(*store, batch, jobs, said, closed_first, round);
    ASSERT_OK_AND_ASSIGN(Batch left, store->GetBatch(batch));
    if (left.complete()) ++released_by_a_process;
    Finish(*store, batch, topic, test.processes, round);
  }
  if (!test.kill) {
    EXPECT_EQ(released_by_a_process, test.rounds);
  }
  std::printf(
      "rounds %d, %d processes each: the processes released the completion "
      "job in %d, a kill landed inside an ack or the close in %d\n",
      test.rounds, test.processes, released_by_a_process, killed_mid_step);
}

}  // namespace testing
}  // namespace delayq
