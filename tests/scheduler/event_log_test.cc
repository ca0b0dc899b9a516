// Copyright delayq authors.
//
// The scheduler's writes to the store's event log (SchedulerOptions::
// event_log, internal::EventLogWriter): when they happen with and without
// the scheduler's threads, who they name, and what a store that refuses
// them or keeps no log does. On the memory store and a simulated clock;
// only the started scheduler's test waits in real time, for its thread.

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "delayq/memory_backend.h"
#include "delayq/scheduler.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/scheduler/event_log_writer.h"
#include "tests/testing/eventually.h"
#include "tests/testing/status_matchers.h"

namespace delayq {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

const absl::Time kStart = absl::FromUnixSeconds(1'700'000'000);

std::vector<std::string> Types(Backend& backend, absl::string_view id) {
  absl::StatusOr<std::vector<LoggedEvent>> events = backend.JobEvents(id, 100);
  EXPECT_TRUE(events.ok()) << events.status();
  std::vector<std::string> types;
  if (!events.ok()) return types;
  for (const LoggedEvent& e : *events) {
    types.push_back(std::string(EventTypeName(e.type)));
  }
  return types;
}

class EventLogTest : public ::testing::Test {
 protected:
  void SetUp() override { store_ = NewMemoryBackend(); }

  // A scheduler over store_ (through a wrapper, so that the test keeps the
  // store to read its log).
  std::unique_ptr<Scheduler> Make(SchedulerOptions options = {}) {
    options.clock = &clock_;
    absl::StatusOr<std::unique_ptr<Scheduler>> scheduler = Scheduler::Create(
        std::make_unique<BackendWrapper>(store_.get()), options);
    EXPECT_TRUE(scheduler.ok()) << scheduler.status();
    return scheduler.ok() ? *std::move(scheduler) : nullptr;
  }

  SimulatedClock clock_{kStart};
  std::unique_ptr<Backend> store_;
};

// A host loop runs no threads: its events reach the store on Tick().
TEST_F(EventLogTest, AHostLoopsEventsAreWrittenOnTick) {
  SchedulerOptions options;
  options.name = "game-server-1";
  std::unique_ptr<Scheduler> scheduler = Make(options);
  JobOptions job;
  job.id = "j1";
  ASSERT_OK(scheduler->Enqueue("t", "p", job).status());
  ASSERT_OK_AND_ASSIGN(std::optional<Lease> lease, scheduler->Reserve("t"));
  ASSERT_TRUE(lease.has_value());
  ASSERT_OK(scheduler->Ack(*lease));
  EXPECT_THAT(Types(*store_, "j1"), IsEmpty());

  ASSERT_OK(scheduler->Tick().status());
  EXPECT_THAT(Types(*store_, "j1"),
              ElementsAre("enqueued", "reserved", "succeeded"));
  ASSERT_OK_AND_ASSIGN(std::vector<LoggedEvent> events,
                       store_->JobEvents("j1", 10));
  for (const LoggedEvent& e : events) {
    EXPECT_EQ(e.who, "game-server-1");
    EXPECT_EQ(e.topic, "t");
    EXPECT_EQ(e.at, kStart);
  }
  EXPECT_EQ(events[1].attempts, 1);
}

// Without threads or ticks, a full buffer is written by the call that
// filled it, and the rest when the scheduler goes.
TEST_F(EventLogTest, WithoutTicksEventsAreWrittenInBatchesAndAtTheEnd) {
  std::unique_ptr<Scheduler> scheduler = Make();
  std::vector<std::string> payloads(300, "p");
  JobOptions batch;
  batch.id = "b";
  ASSERT_OK(scheduler->EnqueueBatch("t", payloads, batch).status());
  EXPECT_THAT(Types(*store_, "b-299"), ElementsAre("enqueued"));
  JobOptions one;
  one.id = "late";
  ASSERT_OK(scheduler->Enqueue("t", "p", one).status());
  EXPECT_THAT(Types(*store_, "late"), IsEmpty());
  scheduler.reset();
  EXPECT_THAT(Types(*store_, "late"), ElementsAre("enqueued"));
}

// A reader that flushes first reads every transition this scheduler made
// (the server's history route does so).
TEST_F(EventLogTest, FlushEventLogWritesWhatIsBuffered) {
  std::unique_ptr<Scheduler> scheduler = Make();
  JobOptions job;
  job.id = "mine";
  ASSERT_OK(scheduler->Enqueue("t", "p", job).status());
  EXPECT_THAT(Types(*store_, "mine"), IsEmpty());
  ASSERT_OK(scheduler->FlushEventLog());
  EXPECT_THAT(Types(*store_, "mine"), ElementsAre("enqueued"));
}

// A started scheduler's writer thread writes without being asked, so
// another process sees the events while this one runs on.
TEST_F(EventLogTest, AStartedSchedulerWritesOnItsOwn) {
  std::unique_ptr<Scheduler> scheduler = Make();
  ASSERT_OK(scheduler->Start());
  JobOptions job;
  job.id = "live";
  ASSERT_OK(scheduler->Enqueue("t", "p", job).status());
  EXPECT_TRUE(testing::Eventually(
      absl::Seconds(30), [&] { return Types(*store_, "live").size() == 1; }));
  scheduler->Stop(absl::ZeroDuration());
}

TEST_F(EventLogTest, NoEventsAreWrittenWhenTheLogIsOff) {
  SchedulerOptions options;
  options.event_log = false;
  std::unique_ptr<Scheduler> scheduler = Make(options);
  JobOptions job;
  job.id = "quiet";
  ASSERT_OK(scheduler->Enqueue("t", "p", job).status());
  ASSERT_OK(scheduler->Tick().status());
  scheduler.reset();
  EXPECT_THAT(Types(*store_, "quiet"), IsEmpty());
}

// A store that refuses the events: they are dropped and reported as
// "events"; the transitions themselves are untouched.
class RefusingLog : public BackendWrapper {
 public:
  RefusingLog(Backend* target, absl::StatusCode code)
      : BackendWrapper(target), code_(code) {}
  absl::Status AppendEvents(absl::Span<const LoggedEvent>) override {
    ++calls;
    return absl::Status(code_, "the log is down");
  }
  std::atomic<int> calls{0};

 private:
  absl::StatusCode code_;
};

TEST_F(EventLogTest, ARefusedBatchIsReportedAndTheJobsGoOn) {
  absl::Mutex mu;
  std::vector<std::string> reported;
  SchedulerOptions options;
  options.clock = &clock_;
  options.on_background_error = [&](absl::string_view what,
                                    const absl::Status& error) {
    absl::MutexLock lock(&mu);
    reported.push_back(absl::StrCat(what, ": ", error.message()));
  };
  auto store = std::make_unique<RefusingLog>(store_.get(),
                                             absl::StatusCode::kUnavailable);
  RefusingLog* log = store.get();
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Scheduler> scheduler,
                       Scheduler::Create(std::move(store), options));
  ASSERT_OK(scheduler->Enqueue("t", "p").status());
  ASSERT_OK(scheduler->Tick().status());
  EXPECT_EQ(log->calls.load(), 1);
  ASSERT_OK(scheduler->Enqueue("t", "p").status());
  EXPECT_THAT(scheduler->FlushEventLog(),
              testing::StatusIs(absl::StatusCode::kUnavailable));
  absl::MutexLock lock(&mu);
  EXPECT_THAT(reported, ElementsAre("events: the log is down",
                                    "events: the log is down"));
}

// A store without a log (Unimplemented) is not an error, and is not asked
// again.
TEST_F(EventLogTest, AStoreWithoutALogIsLeftAlone) {
  std::vector<std::string> reported;
  SchedulerOptions options;
  options.clock = &clock_;
  options.on_background_error = [&](absl::string_view what,
                                    const absl::Status&) {
    reported.push_back(std::string(what));
  };
  auto store = std::make_unique<RefusingLog>(store_.get(),
                                             absl::StatusCode::kUnimplemented);
  RefusingLog* log = store.get();
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Scheduler> scheduler,
                       Scheduler::Create(std::move(store), options));
  ASSERT_OK(scheduler->Enqueue("t", "p").status());
  ASSERT_OK(scheduler->Tick().status());
  ASSERT_OK(scheduler->Enqueue("t", "p").status());
  ASSERT_OK(scheduler->Tick().status());
  EXPECT_EQ(log->calls.load(), 1);
  EXPECT_THAT(reported, IsEmpty());
}

// The writer's events are written over once written (their strings keep
// their memory): each batch must still carry its own events whole, the
// second's empty errors and short ids included, and a buffer that
// overflowed while the store was slow must keep its newest events, in
// order.
class SlowLog : public BackendWrapper {
 public:
  explicit SlowLog(Backend* target) : BackendWrapper(target) {}
  absl::Status AppendEvents(absl::Span<const LoggedEvent> events) override {
    {
      absl::MutexLock lock(&mu_);
      ++calls_;
      mu_.Await(absl::Condition(&open_));
    }
    return BackendWrapper::AppendEvents(events);
  }
  // Waits until a batch is held here.
  void AwaitHeld() {
    absl::MutexLock lock(&mu_);
    auto called = [this]()
                      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return calls_ > 0; };
    mu_.Await(absl::Condition(&called));
  }
  // Lets every batch through, held or to come.
  void Open() {
    absl::MutexLock lock(&mu_);
    open_ = true;
  }

 private:
  absl::Mutex mu_;
  bool open_ ABSL_GUARDED_BY(mu_) = false;
  int calls_ ABSL_GUARDED_BY(mu_) = 0;
};

Event Made(const std::string& id, int attempts, const std::string& error) {
  Event e;
  e.type = error.empty() ? EventType::kSucceeded : EventType::kFailed;
  e.id = id;
  e.topic = "t";
  e.attempts = attempts;
  e.error = error;
  return e;
}

TEST_F(EventLogTest, TheWritersReusedEventsCarryEachBatchWhole) {
  internal::EventLogWriter writer(store_.get(), "me", /*max_buffered=*/1000,
                                  nullptr);
  const std::string long_id(40, 'x'), long_error(60, 'e');
  for (int i = 0; i < 3; ++i) writer.Add({Made(long_id, i, long_error)});
  ASSERT_OK(writer.Flush());
  for (int i = 0; i < 2; ++i) writer.Add({Made("s", i, "")});
  ASSERT_OK(writer.Flush());
  // The third batch goes into the memory of the first.
  writer.Add({Made("s", 2, "")});
  ASSERT_OK(writer.Flush());

  ASSERT_OK_AND_ASSIGN(std::vector<LoggedEvent> first,
                       store_->JobEvents(long_id, 10));
  ASSERT_EQ(first.size(), 3u);
  EXPECT_EQ(first[2].error, long_error);
  ASSERT_OK_AND_ASSIGN(std::vector<LoggedEvent> short_ones,
                       store_->JobEvents("s", 10));
  ASSERT_EQ(short_ones.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(short_ones[i].attempts, i);
    EXPECT_EQ(short_ones[i].error, "");
    EXPECT_EQ(short_ones[i].who, "me");
    EXPECT_EQ(short_ones[i].type, EventType::kSucceeded);
  }
}

TEST_F(EventLogTest, AnOverflowingBufferKeepsItsNewestEventsInOrder) {
  SlowLog slow(store_.get());
  constexpr size_t kMax = internal::EventLogWriter::kFlushAt;
  internal::EventLogWriter writer(&slow, "me", kMax, nullptr);
  writer.Start();
  writer.Add({Made("j", 0, "")});
  // The writer's thread holds the first event's batch, waiting on the
  // store, while the buffer overflows.
  slow.AwaitHeld();
  const int more = static_cast<int>(kMax) + 100;
  for (int i = 1; i <= more; ++i) writer.Add({Made("j", i, "")});
  EXPECT_EQ(writer.dropped(), 100);
  slow.Open();
  writer.Close();

  ASSERT_OK_AND_ASSIGN(std::vector<LoggedEvent> kept,
                       store_->JobEvents("j", 100'000));
  ASSERT_EQ(kept.size(), kMax + 1);
  EXPECT_EQ(kept[0].attempts, 0);
  for (size_t i = 1; i < kept.size(); ++i) {
    EXPECT_EQ(kept[i].attempts, 100 + static_cast<int>(i)) << i;
  }
}

// A burst larger than the spent events a batch keeps: written whole, and
// the events after it too, into a batch cut back to kKeptSpent.
TEST_F(EventLogTest, ABurstIsWrittenWholeAndTheWriterGoesOn) {
  SlowLog slow(store_.get());
  internal::EventLogWriter writer(&slow, "me", /*max_buffered=*/100'000,
                                  nullptr);
  writer.Start();
  writer.Add({Made("j", 0, "")});
  slow.AwaitHeld();
  const int burst = 3 * static_cast<int>(internal::EventLogWriter::kKeptSpent);
  for (int i = 1; i <= burst; ++i) writer.Add({Made("j", i, "")});
  slow.Open();
  ASSERT_OK(writer.Flush());
  for (int i = burst + 1; i <= burst + 10; ++i) writer.Add({Made("j", i, "")});
  writer.Close();

  ASSERT_OK_AND_ASSIGN(std::vector<LoggedEvent> kept,
                       store_->JobEvents("j", 100'000));
  ASSERT_EQ(kept.size(), static_cast<size_t>(burst + 11));
  for (size_t i = 0; i < kept.size(); ++i) {
    EXPECT_EQ(kept[i].attempts, static_cast<int>(i)) << i;
  }
  EXPECT_EQ(writer.dropped(), 0);
}

}  // namespace
}  // namespace delayq
