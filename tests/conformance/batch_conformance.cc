// Copyright delayq authors.
//
// Conformance tests of batches: the completion job waits while the batch is
// open or any job of it is unfinished, and is released exactly once, by the
// step that finishes the last job or closes the batch; each job is counted
// once, by how it first finished. See batch_conformance.h.

#include "tests/conformance/batch_conformance.h"

#include <ostream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "tests/testing/status_matchers.h"

namespace delayq {

// Test output shows a batch's fields rather than its bytes.
inline void PrintTo(const Batch& b, std::ostream* os) {
  *os << "{id " << b.id << ", completion " << b.completion_id
      << (b.closed ? ", closed" : ", open") << ", total " << b.total
      << ", done " << b.done << ", dead " << b.dead << ", cancelled "
      << b.cancelled << "}";
}

namespace testing {
namespace {

using ::testing::IsEmpty;

// `job` of batch `batch`.
NewJob Of(NewJob job, absl::string_view batch) {
  job.batch = std::string(batch);
  return job;
}

JobState StateOf(Backend& backend, absl::string_view id) {
  absl::StatusOr<Job> job = backend.Get(id);
  EXPECT_OK(job.status()) << id;
  return job.ok() ? job->state : JobState::kDone;
}

Batch Expected(absl::string_view id, bool closed, int64_t total, int64_t done,
               int64_t dead, int64_t cancelled) {
  Batch b;
  b.id = std::string(id);
  b.completion_id = b.id;
  b.closed = closed;
  b.total = total;
  b.done = done;
  b.dead = dead;
  b.cancelled = cancelled;
  return b;
}

// Batch `id`, failing the test when it cannot be read.
Batch BatchOf(Backend& backend, absl::string_view id) {
  absl::StatusOr<Batch> b = backend.GetBatch(id);
  EXPECT_OK(b.status()) << id;
  return b.ok() ? *b : Batch();
}

// Reserves `id`, the only due job of `topic`, at `now`.
Lease Take(Backend& backend, absl::string_view topic, absl::string_view id,
           absl::Time now) {
  absl::StatusOr<std::vector<Lease>> leases = backend.Reserve(topic, 1, now);
  EXPECT_OK(leases.status());
  if (!leases.ok() || leases->size() != 1) {
    ADD_FAILURE() << "nothing reserved of " << topic;
    return Lease();
  }
  EXPECT_EQ((*leases)[0].job.id, id);
  return (*leases)[0];
}

TEST_P(BatchConformanceTest, TheCompletionJobWaitsInAnOpenBatch) {
  const std::string topic = Topic("done");
  ASSERT_OK(backend_->OpenBatch(MakeJob("{b}batch", topic), kT0));
  ASSERT_OK_AND_ASSIGN(Batch batch, backend_->GetBatch("{b}batch"));
  EXPECT_EQ(batch, Expected("{b}batch", false, 0, 0, 0, 0));
  EXPECT_EQ(batch.pending(), 0);
  EXPECT_FALSE(batch.complete());
  ASSERT_OK_AND_ASSIGN(Job job, backend_->Get("{b}batch"));
  EXPECT_EQ(job.state, JobState::kWaiting);
  EXPECT_EQ(job.payload, "payload of {b}batch");
  ASSERT_OK_AND_ASSIGN(TopicStats stats, backend_->Stats(topic));
  EXPECT_EQ(stats.waiting, 1);
  EXPECT_THAT(backend_->Reserve(topic, 10, At(absl::Hours(1))),
              IsOkAndHolds(IsEmpty()));
  EXPECT_THAT(backend_->NextDue(), IsOkAndHolds(absl::InfiniteFuture()));
}

TEST_P(BatchConformanceTest, AnIdInUseCannotOpenABatch) {
  const std::string topic = Topic();
  AddOne(MakeJob("{b}taken", topic));
  EXPECT_EQ(backend_->OpenBatch(MakeJob("{b}taken", topic), kT0).code(),
            absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(backend_->GetBatch("{b}taken").status().code(),
            absl::StatusCode::kNotFound);
  ASSERT_OK(backend_->OpenBatch(MakeJob("{b}batch", topic), kT0));
  EXPECT_EQ(backend_->OpenBatch(MakeJob("{b}batch", topic), kT0).code(),
            absl::StatusCode::kAlreadyExists);
}

TEST_P(BatchConformanceTest, ReleasedOnceEveryJobFinishedAndTheBatchClosed) {
  const std::string topic = Topic("work");
  const std::string after = Topic("after");
  ASSERT_OK(backend_->OpenBatch(MakeJob("{b}batch", after), kT0));
  // Added over two calls; one of them dies at its first failure.
  NewJob fragile = Of(MakeJob("{b}2", topic), "{b}batch");
  fragile.max_attempts = 1;
  ASSERT_OK(
      backend_->Add({Of(MakeJob("{b}1", topic), "{b}batch"), fragile}, kT0));
  AddOne(Of(MakeJob("{b}3", topic), "{b}batch"));
  EXPECT_EQ(BatchOf(*backend_, "{b}batch"),
            Expected("{b}batch", false, 3, 0, 0, 0));

  ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases,
                       backend_->Reserve(topic, 2, At(absl::Seconds(1))));
  ASSERT_EQ(leases.size(), 2u);
  ASSERT_OK(backend_->Ack("{b}1", leases[0].token, "", At(absl::Seconds(2))));
  ASSERT_THAT(backend_->Fail("{b}2", leases[1].token, "boom",
                             At(absl::Seconds(3)), At(absl::Seconds(2))),
              IsOkAndHolds(FailOutcome::kDead));
  ASSERT_OK(backend_->Cancel("{b}3", At(absl::Seconds(2))));
  // Every job finished, but the batch is open: more may come.
  EXPECT_EQ(BatchOf(*backend_, "{b}batch"),
            Expected("{b}batch", false, 3, 1, 1, 1));
  EXPECT_EQ(StateOf(*backend_, "{b}batch"), JobState::kWaiting);

  ASSERT_OK(backend_->CloseBatch("{b}batch", At(absl::Seconds(4))));
  ASSERT_OK_AND_ASSIGN(Batch batch, backend_->GetBatch("{b}batch"));
  EXPECT_EQ(batch, Expected("{b}batch", true, 3, 1, 1, 1));
  EXPECT_TRUE(batch.complete());
  EXPECT_EQ(StateOf(*backend_, "{b}batch"), JobState::kReady);
  Take(*backend_, after, "{b}batch", At(absl::Seconds(5)));
  // Closing again changes nothing.
  ASSERT_OK(backend_->CloseBatch("{b}batch", At(absl::Seconds(6))));
  EXPECT_EQ(StateOf(*backend_, "{b}batch"), JobState::kReserved);
}

TEST_P(BatchConformanceTest, TheLastAckReleasesAClosedBatch) {
  const std::string topic = Topic("work");
  const std::string after = Topic("after");
  ASSERT_OK(backend_->OpenBatch(MakeJob("{b}batch", after), kT0));
  AddOne(Of(MakeJob("{b}1", topic), "{b}batch"));
  AddOne(Of(MakeJob("{b}2", topic), "{b}batch"));
  ASSERT_OK(backend_->CloseBatch("{b}batch", At(absl::Seconds(1))));
  EXPECT_EQ(BatchOf(*backend_, "{b}batch"),
            Expected("{b}batch", true, 2, 0, 0, 0));

  Lease one = Take(*backend_, topic, "{b}1", At(absl::Seconds(2)));
  ASSERT_OK(backend_->Ack("{b}1", one.token, "", At(absl::Seconds(2))));
  EXPECT_EQ(StateOf(*backend_, "{b}batch"), JobState::kWaiting);
  Lease two = Take(*backend_, topic, "{b}2", At(absl::Seconds(3)));
  ASSERT_OK(backend_->Ack("{b}2", two.token, "", At(absl::Seconds(3))));
  EXPECT_EQ(StateOf(*backend_, "{b}batch"), JobState::kReady);
  EXPECT_EQ(BatchOf(*backend_, "{b}batch"),
            Expected("{b}batch", true, 2, 2, 0, 0));
  ASSERT_OK_AND_ASSIGN(TopicStats stats, backend_->Stats(after));
  EXPECT_EQ(stats.ready, 1);
  EXPECT_EQ(stats.waiting, 0);
}

TEST_P(BatchConformanceTest, AnAckBatchThatFinishesTheBatchReleasesItOnce) {
  const std::string topic = Topic("work");
  const std::string after = Topic("after");
  ASSERT_OK(backend_->OpenBatch(MakeJob("{b}batch", after), kT0));
  for (const char* id : {"{b}1", "{b}2", "{b}3"}) {
    AddOne(Of(MakeJob(id, topic), "{b}batch"));
  }
  ASSERT_OK(backend_->CloseBatch("{b}batch", kT0));
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases,
                       backend_->Reserve(topic, 3, At(absl::Seconds(1))));
  ASSERT_EQ(leases.size(), 3u);
  ASSERT_OK_AND_ASSIGN(std::vector<absl::Status> acked,
                       backend_->AckBatch(leases, At(absl::Seconds(2))));
  for (const absl::Status& s : acked) EXPECT_OK(s);
  EXPECT_EQ(BatchOf(*backend_, "{b}batch"),
            Expected("{b}batch", true, 3, 3, 0, 0));
  Take(*backend_, after, "{b}batch", At(absl::Seconds(3)));
}

// A job that is retried and released counts only when it finishes; a
// worker's ack-and-reserve that finishes the batch takes the completion
// job in the same call.
TEST_P(BatchConformanceTest, AnAckAndReserveThatFinishesTheBatchTakesItsJob) {
  const std::string topic = Topic("work");
  const std::string after = Topic("after");
  ASSERT_OK(backend_->OpenBatch(MakeJob("{b}batch", after), kT0));
  AddOne(Of(MakeJob("{b}1", topic), "{b}batch"));
  ASSERT_OK(backend_->CloseBatch("{b}batch", kT0));
  Lease lease = Take(*backend_, topic, "{b}1", At(absl::Seconds(1)));
  ASSERT_THAT(backend_->Fail("{b}1", lease.token, "again", At(absl::Seconds(1)),
                             At(absl::Seconds(1))),
              IsOkAndHolds(FailOutcome::kRetry));
  lease = Take(*backend_, topic, "{b}1", At(absl::Seconds(2)));
  ASSERT_OK(backend_->Release("{b}1", lease.token, At(absl::Seconds(2)),
                              At(absl::Seconds(2))));
  EXPECT_EQ(BatchOf(*backend_, "{b}batch"),
            Expected("{b}batch", true, 1, 0, 0, 0));
  EXPECT_EQ(StateOf(*backend_, "{b}batch"), JobState::kWaiting);

  lease = Take(*backend_, topic, "{b}1", At(absl::Seconds(3)));
  AckReserved next =
      backend_->AckAndReserve("{b}1", lease.token, "", after, 1,
                              At(absl::Seconds(3)), /*report=*/nullptr);
  ASSERT_OK(next.acked);
  ASSERT_OK(next.leases.status());
  ASSERT_EQ(next.leases->size(), 1u);
  EXPECT_EQ((*next.leases)[0].job.id, "{b}batch");
  EXPECT_EQ(BatchOf(*backend_, "{b}batch"),
            Expected("{b}batch", true, 1, 1, 0, 0));
}

TEST_P(BatchConformanceTest, AnEmptyBatchIsReleasedWhenClosed) {
  const std::string after = Topic("after");
  ASSERT_OK(backend_->OpenBatch(MakeJob("{b}batch", after), kT0));
  ASSERT_OK(backend_->CloseBatch("{b}batch", At(absl::Seconds(1))));
  EXPECT_EQ(BatchOf(*backend_, "{b}batch"),
            Expected("{b}batch", true, 0, 0, 0, 0));
  Take(*backend_, after, "{b}batch", At(absl::Seconds(1)));
}

TEST_P(BatchConformanceTest, AClosedOrUnknownBatchTakesNoJobs) {
  const std::string topic = Topic();
  ASSERT_OK(backend_->OpenBatch(MakeJob("{b}batch", Topic("after")), kT0));
  ASSERT_OK(backend_->CloseBatch("{b}batch", kT0));
  EXPECT_EQ(backend_
                ->Add({MakeJob("{b}free", topic),
                       Of(MakeJob("{b}late", topic), "{b}batch")},
                      kT0)
                .code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(backend_
                ->Add({MakeJob("{b}free", topic),
                       Of(MakeJob("{b}lost", topic), "{b}nobatch")},
                      kT0)
                .code(),
            absl::StatusCode::kNotFound);
  ASSERT_OK_AND_ASSIGN(TopicStats stats, backend_->Stats(topic));
  EXPECT_EQ(stats.total(), 0);
  EXPECT_EQ(BatchOf(*backend_, "{b}batch"),
            Expected("{b}batch", true, 0, 0, 0, 0));
  EXPECT_EQ(backend_->CloseBatch("{b}nobatch", kT0).code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(backend_->GetBatch("{b}nobatch").status().code(),
            absl::StatusCode::kNotFound);
  // A plain job's id is no batch's.
  AddOne(MakeJob("{b}plain", topic));
  EXPECT_EQ(backend_->GetBatch("{b}plain").status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(backend_->CloseBatch("{b}plain", kT0).code(),
            absl::StatusCode::kNotFound);
}

TEST_P(BatchConformanceTest, DeathsAndDiscardsByPromotionAreCounted) {
  const std::string topic = Topic("work");
  const std::string after = Topic("after");
  ASSERT_OK(backend_->OpenBatch(MakeJob("{b}batch", after), kT0));
  // One whose only lease runs out, one that lapses dead, one discarded.
  NewJob once = Of(MakeJob("{b}once", topic), "{b}batch");
  once.max_attempts = 1;
  NewJob lapses =
      Of(MakeJob("{b}lapses", topic, At(absl::Seconds(10))), "{b}batch");
  lapses.expire_at = At(absl::Seconds(20));
  NewJob discarded =
      Of(MakeJob("{b}discarded", topic, At(absl::Seconds(10))), "{b}batch");
  discarded.expire_at = At(absl::Seconds(20));
  discarded.discard_expired = true;
  ASSERT_OK(backend_->Add({once, lapses, discarded}, kT0));
  ASSERT_OK(backend_->CloseBatch("{b}batch", kT0));
  Take(*backend_, topic, "{b}once", At(absl::Seconds(1)));

  ASSERT_OK(backend_->PromoteDue(At(absl::Seconds(60)), 1000).status());
  EXPECT_EQ(BatchOf(*backend_, "{b}batch"),
            Expected("{b}batch", true, 3, 0, 2, 1));
  EXPECT_EQ(StateOf(*backend_, "{b}batch"), JobState::kReady);
}

TEST_P(BatchConformanceTest, ADeadJobKickedBackStaysCountedOnce) {
  const std::string topic = Topic("work");
  ASSERT_OK(backend_->OpenBatch(MakeJob("{b}batch", Topic("after")), kT0));
  NewJob once = Of(MakeJob("{b}once", topic), "{b}batch");
  once.max_attempts = 1;
  AddOne(once);
  AddOne(Of(MakeJob("{b}other", topic, At(absl::Hours(1))), "{b}batch"));
  Lease lease = Take(*backend_, topic, "{b}once", At(absl::Seconds(1)));
  ASSERT_THAT(backend_->Fail("{b}once", lease.token, "boom",
                             At(absl::Seconds(2)), At(absl::Seconds(1))),
              IsOkAndHolds(FailOutcome::kDead));
  ASSERT_OK(backend_->KickJob("{b}once", At(absl::Seconds(2))));
  lease = Take(*backend_, topic, "{b}once", At(absl::Seconds(3)));
  ASSERT_OK(backend_->Ack("{b}once", lease.token, "", At(absl::Seconds(3))));
  EXPECT_EQ(BatchOf(*backend_, "{b}batch"),
            Expected("{b}batch", false, 2, 0, 1, 0));
}

TEST_P(BatchConformanceTest, AJobFailedByItsDependencyIsCountedDead) {
  const std::string topic = Topic("work");
  ASSERT_OK(backend_->OpenBatch(MakeJob("{b}batch", Topic("after")), kT0));
  NewJob dep = MakeJob("{b}dep", topic);
  dep.max_attempts = 1;
  AddOne(dep);
  NewJob waiter = Of(MakeJob("{b}waiter", topic), "{b}batch");
  waiter.after = {"{b}dep"};
  AddOne(waiter);
  NewJob cancels = Of(MakeJob("{b}cancels", topic), "{b}batch");
  cancels.after = {"{b}dep"};
  cancels.on_dependency_failure = DependencyFailure::kCancel;
  AddOne(cancels);
  ASSERT_OK(backend_->CloseBatch("{b}batch", kT0));
  Lease lease = Take(*backend_, topic, "{b}dep", At(absl::Seconds(1)));
  ASSERT_THAT(backend_->Fail("{b}dep", lease.token, "boom",
                             At(absl::Seconds(2)), At(absl::Seconds(1))),
              IsOkAndHolds(FailOutcome::kDead));
  EXPECT_EQ(BatchOf(*backend_, "{b}batch"),
            Expected("{b}batch", true, 2, 0, 1, 1));
  EXPECT_EQ(StateOf(*backend_, "{b}batch"), JobState::kReady);

  // Added after its dependency died: finished as it is added.
  ASSERT_OK(backend_->OpenBatch(MakeJob("{b}second", Topic("after")), kT0));
  NewJob late = Of(MakeJob("{b}late", topic), "{b}second");
  late.after = {"{b}dep"};
  AddOne(late, At(absl::Seconds(2)));
  EXPECT_EQ(BatchOf(*backend_, "{b}second"),
            Expected("{b}second", false, 1, 0, 1, 0));
}

TEST_P(BatchConformanceTest, TheCompletionJobKeepsItsRunAt) {
  const std::string topic = Topic("work");
  const std::string after = Topic("after");
  ASSERT_OK(
      backend_->OpenBatch(MakeJob("{b}batch", after, At(absl::Hours(1))), kT0));
  AddOne(Of(MakeJob("{b}1", topic), "{b}batch"));
  ASSERT_OK(backend_->CloseBatch("{b}batch", kT0));
  Lease lease = Take(*backend_, topic, "{b}1", At(absl::Seconds(1)));
  ASSERT_OK(backend_->Ack("{b}1", lease.token, "", At(absl::Seconds(1))));
  EXPECT_EQ(StateOf(*backend_, "{b}batch"), JobState::kDelayed);
  EXPECT_THAT(backend_->NextDue(), IsOkAndHolds(At(absl::Hours(1))));
  Take(*backend_, after, "{b}batch", At(absl::Hours(1)));
}

TEST_P(BatchConformanceTest, CancellingTheCompletionJobDropsTheBatch) {
  const std::string topic = Topic("work");
  ASSERT_OK(backend_->OpenBatch(MakeJob("{b}batch", Topic("after")), kT0));
  AddOne(Of(MakeJob("{b}1", topic), "{b}batch"));
  ASSERT_OK(backend_->Cancel("{b}batch", At(absl::Seconds(1))));
  EXPECT_EQ(backend_->GetBatch("{b}batch").status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(backend_->Add({Of(MakeJob("{b}2", topic), "{b}batch")}, kT0).code(),
            absl::StatusCode::kNotFound);
  // Its job runs on, counted by no one.
  Lease lease = Take(*backend_, topic, "{b}1", At(absl::Seconds(2)));
  ASSERT_OK(backend_->Ack("{b}1", lease.token, "", At(absl::Seconds(2))));
  EXPECT_EQ(backend_->Get("{b}batch").status().code(),
            absl::StatusCode::kNotFound);
}

TEST_P(BatchConformanceTest, TheBatchIsReadableWhileItsCompletionJobIsKept) {
  const std::string after = Topic("after");
  NewJob kept = MakeJob("{b}kept", after);
  kept.keep_for = absl::Hours(1);
  kept.keep_at_most = 10;
  ASSERT_OK(backend_->OpenBatch(kept, kT0));
  ASSERT_OK(backend_->CloseBatch("{b}kept", kT0));
  Lease lease = Take(*backend_, after, "{b}kept", At(absl::Seconds(1)));
  ASSERT_OK(backend_->Ack("{b}kept", lease.token, "", At(absl::Seconds(1))));
  EXPECT_EQ(BatchOf(*backend_, "{b}kept"),
            Expected("{b}kept", true, 0, 0, 0, 0));

  ASSERT_OK(backend_->OpenBatch(MakeJob("{b}gone", after), kT0));
  ASSERT_OK(backend_->CloseBatch("{b}gone", kT0));
  lease = Take(*backend_, after, "{b}gone", At(absl::Seconds(2)));
  ASSERT_OK(backend_->Ack("{b}gone", lease.token, "", At(absl::Seconds(2))));
  EXPECT_EQ(backend_->GetBatch("{b}gone").status().code(),
            absl::StatusCode::kNotFound);
  // Its id is free again, for a job or a batch.
  ASSERT_OK(backend_->OpenBatch(MakeJob("{b}gone", after), kT0));
  EXPECT_EQ(BatchOf(*backend_, "{b}gone"),
            Expected("{b}gone", false, 0, 0, 0, 0));
}

// How a job finishes in the tests of a reused batch id.
enum class Finish { kAck, kCancel, kDead };

// Finishes `id`, the only due job of `topic` (added with max_attempts 1),
// at `now` as `how` says.
void FinishJob(Backend& backend, absl::string_view topic, absl::string_view id,
               Finish how, absl::Time now) {
  if (how == Finish::kCancel) {
    EXPECT_OK(backend.Cancel(id, now));
    return;
  }
  const Lease lease = Take(backend, topic, id, now);
  if (how == Finish::kAck) {
    EXPECT_OK(backend.Ack(id, lease.token, "", now));
  } else {
    EXPECT_THAT(backend.Fail(id, lease.token, "boom", now, now),
                IsOkAndHolds(FailOutcome::kDead));
  }
}

// `job`, dying at its first failure.
NewJob Fragile(NewJob job) {
  job.max_attempts = 1;
  return job;
}

// Batch `batch`, open and new, with `member` pending; a job `old` of an
// earlier batch of the same id still pending too. Finishing `old` however
// it finishes changes nothing in the new batch; only `member`'s ack
// releases the completion job, once.
void ExpectOnlyTheNewJobCounts(Backend& backend, absl::string_view batch,
                               absl::string_view old_topic,
                               absl::string_view old, Finish how,
                               absl::string_view topic,
                               absl::string_view member,
                               absl::string_view after) {
  ASSERT_OK(backend.CloseBatch(batch, At(absl::Seconds(3))));
  const Batch fresh = Expected(batch, true, 1, 0, 0, 0);
  EXPECT_EQ(BatchOf(backend, batch), fresh);

  FinishJob(backend, old_topic, old, how, At(absl::Seconds(4)));
  EXPECT_EQ(BatchOf(backend, batch), fresh);
  EXPECT_EQ(StateOf(backend, batch), JobState::kWaiting);
  EXPECT_THAT(backend.Reserve(after, 10, At(absl::Seconds(5))),
              IsOkAndHolds(IsEmpty()));

  const Lease lease = Take(backend, topic, member, At(absl::Seconds(6)));
  ASSERT_OK(backend.Ack(member, lease.token, "", At(absl::Seconds(6))));
  EXPECT_EQ(BatchOf(backend, batch), Expected(batch, true, 1, 1, 0, 0));
  ASSERT_OK_AND_ASSIGN(TopicStats stats, backend.Stats(after));
  EXPECT_EQ(stats.ready, 1);
  EXPECT_EQ(stats.waiting, 0);
  Take(backend, after, batch, At(absl::Seconds(7)));
  EXPECT_THAT(backend.Reserve(after, 10, At(absl::Seconds(8))),
              IsOkAndHolds(IsEmpty()));
}

// A batch dropped with its cancelled completion job takes its membership
// along: a new batch of the same id counts only its own jobs, however the
// old batch's pending job finishes afterwards.
TEST_P(BatchConformanceTest, AReusedBatchIdDoesNotCountTheDroppedBatchsJobs) {
  const struct {
    Finish how;
    const char* name;
  } kWays[] = {{Finish::kAck, "ack"},
               {Finish::kCancel, "cancel"},
               {Finish::kDead, "dead"}};
  for (const auto& way : kWays) {
    SCOPED_TRACE(way.name);
    const std::string batch = absl::StrCat("{b}batch-", way.name);
    const std::string old = absl::StrCat("{b}old-", way.name);
    const std::string member = absl::StrCat("{b}new-", way.name);
    const std::string old_topic = Topic(absl::StrCat("old-", way.name));
    const std::string topic = Topic(absl::StrCat("new-", way.name));
    const std::string after = Topic(absl::StrCat("after-", way.name));
    ASSERT_OK(backend_->OpenBatch(MakeJob(batch, after), kT0));
    AddOne(Fragile(Of(MakeJob(old, old_topic), batch)));
    ASSERT_OK(backend_->Cancel(batch, At(absl::Seconds(1))));
    ASSERT_EQ(backend_->GetBatch(batch).status().code(),
              absl::StatusCode::kNotFound);

    ASSERT_OK(backend_->OpenBatch(MakeJob(batch, after), At(absl::Seconds(2))));
    AddOne(Of(MakeJob(member, topic), batch), At(absl::Seconds(2)));
    ExpectOnlyTheNewJobCounts(*backend_, batch, old_topic, old, way.how, topic,
                              member, after);
  }
}

// The same when the old batch left with its completion job done: a job of
// it that died (and was counted there) and was kicked back counts in no
// later batch of the id.
TEST_P(BatchConformanceTest, AKickedJobOfAFinishedBatchCountsInNoLaterOne) {
  const std::string work = Topic("work");
  const std::string topic = Topic("new");
  const std::string after = Topic("after");
  ASSERT_OK(backend_->OpenBatch(MakeJob("{b}batch", after), kT0));
  AddOne(Fragile(Of(MakeJob("{b}old", work), "{b}batch")));
  ASSERT_OK(backend_->CloseBatch("{b}batch", kT0));
  FinishJob(*backend_, work, "{b}old", Finish::kDead, At(absl::Seconds(1)));
  const Lease done = Take(*backend_, after, "{b}batch", At(absl::Seconds(1)));
  ASSERT_OK(backend_->Ack("{b}batch", done.token, "", At(absl::Seconds(1))));
  ASSERT_OK(backend_->KickJob("{b}old", At(absl::Seconds(1))));

  ASSERT_OK(
      backend_->OpenBatch(MakeJob("{b}batch", after), At(absl::Seconds(2))));
  AddOne(Of(MakeJob("{b}new", topic), "{b}batch"), At(absl::Seconds(2)));
  ExpectOnlyTheNewJobCounts(*backend_, "{b}batch", work, "{b}old", Finish::kAck,
                            topic, "{b}new", after);
}

// The step that releases the completion job reports it (Settled): here the
// death of the last job of the batch.
TEST_P(BatchConformanceTest, TheStepThatReleasesTheCompletionJobReportsIt) {
  const std::string topic = Topic();
  const std::string done = Topic("done");
  ASSERT_OK(backend_->OpenBatch(MakeJob("{b}batch", done), kT0));
  AddOne(Of(MakeJob("{b}1", topic), "{b}batch"));
  NewJob last = Of(MakeJob("{b}2", topic), "{b}batch");
  last.max_attempts = 1;
  AddOne(last);
  std::vector<Settled> settled;
  ASSERT_OK(backend_->CloseBatch("{b}batch", At(absl::Seconds(1)), &settled));
  EXPECT_THAT(settled, IsEmpty());
  const Lease one = Take(*backend_, topic, "{b}1", At(absl::Seconds(2)));
  ASSERT_OK(
      backend_->Ack("{b}1", one.token, "", At(absl::Seconds(3)), &settled));
  EXPECT_THAT(settled, IsEmpty());
  const Lease two = Take(*backend_, topic, "{b}2", At(absl::Seconds(4)));
  ASSERT_THAT(backend_->Fail("{b}2", two.token, "boom", At(absl::Seconds(9)),
                             At(absl::Seconds(5)), &settled),
              IsOkAndHolds(FailOutcome::kDead));
  ASSERT_EQ(settled.size(), 1u);
  EXPECT_EQ(settled[0].kind, Settled::Kind::kReady);
  EXPECT_EQ(settled[0].id, "{b}batch");
  EXPECT_EQ(settled[0].topic, done);
  EXPECT_EQ(StateOf(*backend_, "{b}batch"), JobState::kReady);
}

// Closing a batch with nothing pending releases its completion job, and
// says so; delayed when its run_at is still to come.
TEST_P(BatchConformanceTest, ClosingAFinishedBatchReportsItsCompletionJob) {
  const std::string done = Topic("done");
  ASSERT_OK(
      backend_->OpenBatch(MakeJob("{b}batch", done, At(absl::Hours(1))), kT0));
  std::vector<Settled> settled;
  ASSERT_OK(backend_->CloseBatch("{b}batch", At(absl::Seconds(1)), &settled));
  ASSERT_EQ(settled.size(), 1u);
  EXPECT_EQ(settled[0].kind, Settled::Kind::kDelayed);
  EXPECT_EQ(settled[0].id, "{b}batch");
  EXPECT_EQ(settled[0].topic, done);
  // Closed again: nothing more.
  settled.clear();
  ASSERT_OK(backend_->CloseBatch("{b}batch", At(absl::Seconds(2)), &settled));
  EXPECT_THAT(settled, IsEmpty());
}

}  // namespace
}  // namespace testing
}  // namespace delayq
