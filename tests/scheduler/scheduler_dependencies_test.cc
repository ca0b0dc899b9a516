// Copyright delayq authors.
//
// Jobs that wait for others, through the Scheduler: what Enqueue() refuses
// of JobOptions::after, and a Reserve() that waits for a job's dependant
// gets it as soon as the last dependency is acknowledged. On the memory
// store and a simulated clock.

#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "delayq/memory_backend.h"
#include "delayq/scheduler.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/common/generated_id.h"
#include "tests/scheduler/scheduler_fixture.h"
#include "tests/testing/status_matchers.h"

namespace delayq {
namespace {

using ::delayq::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;

JobOptions After(std::vector<std::string> after) {
  JobOptions options;
  options.after = std::move(after);
  return options;
}

TEST_F(SchedulerTest, EnqueueChecksDependencies) {
  const auto kInvalid = absl::StatusCode::kInvalidArgument;
  EXPECT_THAT(scheduler_->Enqueue("t", "p", After({""})), StatusIs(kInvalid));
  EXPECT_THAT(scheduler_->Enqueue("t", "p", After({"a", "a"})),
              StatusIs(kInvalid));
  JobOptions self = After({"me"});
  self.id = "me";
  EXPECT_THAT(scheduler_->Enqueue("t", "p", self), StatusIs(kInvalid));
  JobOptions replace = After({"a"});
  replace.id = "r";
  replace.replace = true;
  EXPECT_THAT(scheduler_->Enqueue("t", "p", replace), StatusIs(kInvalid));
  std::vector<std::string> many;
  for (int i = 0; i <= kMaxDependencies; ++i) {
    many.push_back("d" + std::to_string(i));
  }
  EXPECT_THAT(scheduler_->Enqueue("t", "p", After(many)), StatusIs(kInvalid));
  EXPECT_THAT(scheduler_->Enqueue("t", "p", After({"unknown"})),
              StatusIs(absl::StatusCode::kNotFound));
  ScheduleOptions nightly;
  nightly.job.after = {"a"};
  EXPECT_THAT(scheduler_->Schedule("n", "@every 1h", "t", "p", nightly),
              StatusIs(kInvalid));
}

TEST_F(SchedulerTest, AWaitingReserveGetsTheDependantOnceItsDependencyIsDone) {
  ASSERT_OK_AND_ASSIGN(std::string child, scheduler_->Enqueue("child", "c"));
  ASSERT_OK_AND_ASSIGN(std::string parent,
                       scheduler_->Enqueue("parent", "p", After({child})));
  ASSERT_OK_AND_ASSIGN(Job waiting, scheduler_->Get(parent));
  EXPECT_EQ(waiting.state, JobState::kWaiting);
  EXPECT_TRUE(NothingReady("parent"));

  const Lease lease = MustReserve("child");
  absl::StatusOr<std::optional<Lease>> got;
  // The simulated clock never moves here: only the ack's wake-up can end
  // this wait.
  std::thread worker(
      [&] { got = scheduler_->Reserve("parent", absl::Hours(1)); });
  ASSERT_OK(scheduler_->Ack(lease));
  worker.join();
  ASSERT_OK(got.status());
  ASSERT_TRUE(got->has_value());
  EXPECT_EQ((*got)->job.id, parent);
}

Scheduler::FlowJob Flow(std::string topic, std::string id,
                        std::vector<std::string> after = {}) {
  Scheduler::FlowJob job;
  job.topic = std::move(topic);
  job.payload = id;
  job.options.id = std::move(id);
  job.options.after = std::move(after);
  return job;
}

// A tree given parent first: "publish" waits for two thumbnails, one of
// which waits for the upload. The store gets the jobs in an order it
// takes; each runs once, and only after what it waits for.
TEST_F(SchedulerTest, AFlowIsEnqueuedAtOnceInAnyOrderAndRunsInItsOrder) {
  ASSERT_OK_AND_ASSIGN(
      std::vector<std::string> ids,
      scheduler_->EnqueueFlow({Flow("pages", "publish", {"thumb-s", "thumb-l"}),
                               Flow("images", "thumb-s", {"upload"}),
                               Flow("images", "thumb-l"),
                               Flow("files", "upload")}));
  EXPECT_THAT(
      ids, ::testing::ElementsAre("publish", "thumb-s", "thumb-l", "upload"));
  ASSERT_OK_AND_ASSIGN(Job publish, scheduler_->Get("publish"));
  EXPECT_EQ(publish.state, JobState::kWaiting);
  ASSERT_OK_AND_ASSIGN(Job small, scheduler_->Get("thumb-s"));
  EXPECT_EQ(small.state, JobState::kWaiting);

  EXPECT_TRUE(NothingReady("pages"));
  ASSERT_OK(scheduler_->Ack(MustReserve("files")));
  const Lease first = MustReserve("images");
  const Lease second = MustReserve("images");
  EXPECT_EQ(first.job.id, "thumb-l");  // ready first: it waited for nothing
  EXPECT_EQ(second.job.id, "thumb-s");
  ASSERT_OK(scheduler_->Ack(first));
  EXPECT_TRUE(NothingReady("pages"));
  ASSERT_OK(scheduler_->Ack(second));
  EXPECT_EQ(MustReserve("pages").job.id, "publish");
}

// On a real clock the checks of a flow's jobs take time, one after the
// other: a job due when it was checked is still stored ready, not delayed
// by the checks of the jobs after it. (An hour's tick: nothing is promoted
// while the test looks.)
TEST(SchedulerFlowTest, AFlowsDueJobsAreStoredReadyOnARealClock) {
  SchedulerOptions options;
  options.tick = absl::Hours(1);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Scheduler> scheduler,
                       Scheduler::Create(NewMemoryBackend(), options));
  std::vector<Scheduler::FlowJob> flow;
  for (int i = 0; i < 500; ++i) flow.push_back(Flow("t", absl::StrCat("j", i)));
  ASSERT_OK(scheduler->EnqueueFlow(flow).status());
  ASSERT_OK_AND_ASSIGN(TopicStats stats, scheduler->Stats("t"));
  EXPECT_EQ(stats.ready, 500);
  EXPECT_EQ(stats.delayed, 0);
}

TEST_F(SchedulerTest, AFlowIsAllOrNothing) {
  const auto kInvalid = absl::StatusCode::kInvalidArgument;
  EXPECT_THAT(scheduler_->EnqueueFlow({}), StatusIs(kInvalid));
  // A cycle, a bad topic, a replace: nothing is stored.
  EXPECT_THAT(
      scheduler_->EnqueueFlow({Flow("t", "a", {"b"}), Flow("t", "b", {"c"}),
                               Flow("t", "c", {"a"})}),
      StatusIs(kInvalid));
  EXPECT_THAT(scheduler_->EnqueueFlow({Flow("t", "a"), Flow("bad topic", "b")}),
              StatusIs(kInvalid));
  Scheduler::FlowJob replace = Flow("t", "r");
  replace.options.replace = true;
  EXPECT_THAT(scheduler_->EnqueueFlow({Flow("t", "a"), replace}),
              StatusIs(kInvalid));
  EXPECT_THAT(scheduler_->EnqueueFlow({Flow("t", "a"), Flow("t", "a")}),
              StatusIs(absl::StatusCode::kAlreadyExists));
  // An unknown dependency, checked by the store: nothing is stored either.
  EXPECT_THAT(scheduler_->EnqueueFlow({Flow("t", "a"), Flow("t", "b", {"x"})}),
              StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(scheduler_->Get("a"), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_TRUE(NothingReady("t"));

  // A job of the store may be waited for too; generated ids come back.
  ASSERT_OK_AND_ASSIGN(std::string stored, scheduler_->Enqueue("t", "s"));
  Scheduler::FlowJob unnamed;
  unnamed.topic = "t";
  unnamed.options.after = {stored};
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> ids,
                       scheduler_->EnqueueFlow({unnamed}));
  ASSERT_EQ(ids.size(), 1u);
  EXPECT_FALSE(ids[0].empty());
  ASSERT_OK_AND_ASSIGN(Job waiting, scheduler_->Get(ids[0]));
  EXPECT_EQ(waiting.state, JobState::kWaiting);
}

Scheduler::FlowJob Unnamed(std::vector<std::string> after = {}) {
  Scheduler::FlowJob job = Flow("t", "");
  job.options.after = std::move(after);
  return job;
}

// Ids made for a flow's jobs are the generated ids Enqueue() makes on a
// store that does not place jobs by hash tag, a tag among the flow's ids
// notwithstanding.
TEST_F(SchedulerTest, AFlowsMadeIdsAreGeneratedIdsOnTheMemoryStore) {
  ASSERT_OK_AND_ASSIGN(
      std::vector<std::string> ids,
      scheduler_->EnqueueFlow({Unnamed(), Flow("t", "{order-17}:render"),
                               Unnamed({"{order-17}:render"}), Unnamed()}));
  ASSERT_EQ(ids.size(), 4u);
  EXPECT_EQ(ids[1], "{order-17}:render");
  std::vector<uint64_t> serials;
  for (size_t i : {0, 2, 3}) {
    const std::optional<internal::GeneratedIdParts> parts =
        internal::ParseGeneratedId(ids[i]);
    ASSERT_TRUE(parts.has_value()) << ids[i];
    serials.push_back(parts->serial);
  }
  EXPECT_THAT(serials, ElementsAre(serials[0], serials[0] + 1, serials[0] + 2));
}

// A store that places jobs by their ids' hash tags, as a sharded Redis
// namespace does, and stores in one step only jobs of one tag (here: the
// whole id when it has none), over the memory store.
class PlacedByTag : public BackendWrapper {
 public:
  explicit PlacedByTag(std::unique_ptr<Backend> target)
      : BackendWrapper(target.get()), owned_(std::move(target)) {}
  bool PlacesIdsByHashTag() const override { return true; }
  absl::Status CheckAddInOneStep(absl::Span<const NewJob> jobs) const override {
    ++checks_;
    for (const NewJob& job : jobs) {
      if (Place(job.id) != Place(jobs.front().id)) {
        return absl::InvalidArgumentError(
            absl::StrCat("'", job.id, "' lies elsewhere: give a hash tag"));
      }
    }
    return absl::OkStatus();
  }
  absl::Status Add(absl::Span<const NewJob> jobs, absl::Time now) override {
    ++adds_;
    return BackendWrapper::Add(jobs, now);
  }
  static std::string Place(const std::string& id) {
    const size_t open = id.find('{');
    const size_t close = id.find('}', open + 1);
    if (open == std::string::npos || close == std::string::npos) return id;
    return id.substr(open + 1, close - open - 1);
  }

  mutable int checks_ = 0;
  int adds_ = 0;

 private:
  std::unique_ptr<Backend> owned_;
};

class SchedulerFlowPlacementTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = std::make_unique<PlacedByTag>(NewMemoryBackend());
    store_ = store.get();
    SchedulerOptions options;
    options.clock = &clock_;
    ASSERT_OK_AND_ASSIGN(scheduler_,
                         Scheduler::Create(std::move(store), options));
  }

  // The tag every id of `ids` has, or "" when they differ.
  static std::string SharedTag(const std::vector<std::string>& ids) {
    const std::string tag = PlacedByTag::Place(ids.front());
    for (const std::string& id : ids) {
      if (PlacedByTag::Place(id) != tag) return "";
    }
    return tag;
  }

  SimulatedClock clock_{kStart};
  PlacedByTag* store_ = nullptr;
  std::unique_ptr<Scheduler> scheduler_;
};

TEST_F(SchedulerFlowPlacementTest, MadeIdsShareATagOfTheirOwn) {
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> first,
                       scheduler_->EnqueueFlow({Unnamed(), Unnamed()}));
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> second,
                       scheduler_->EnqueueFlow({Unnamed(), Unnamed()}));
  const std::string tag = SharedTag(first);
  ASSERT_FALSE(tag.empty()) << first[0] << " " << first[1];
  EXPECT_TRUE(absl::StartsWith(first[0], absl::StrCat("{", tag, "}:")));
  EXPECT_NE(first[0], first[1]);
  // Each flow its own tag, so that flows still spread.
  EXPECT_NE(SharedTag(second), tag);
  EXPECT_FALSE(SharedTag(second).empty());
  EXPECT_EQ(store_->adds_, 2);
}

TEST_F(SchedulerFlowPlacementTest, MadeIdsTakeTheTagTheFlowNames) {
  // The tag of the flow's own ids, wherever its job stands.
  ASSERT_OK_AND_ASSIGN(
      std::vector<std::string> ids,
      scheduler_->EnqueueFlow({Unnamed(), Flow("t", "{order-17}:render"),
                               Unnamed({"{order-17}:render"})}));
  EXPECT_TRUE(absl::StartsWith(ids[0], "{order-17}:")) << ids[0];
  EXPECT_TRUE(absl::StartsWith(ids[2], "{order-17}:")) << ids[2];
  EXPECT_NE(ids[0], ids[2]);
  // Without one among its own ids, the tag of a job it waits for.
  JobOptions upload;
  upload.id = "{order-5}:upload";
  ASSERT_OK(scheduler_->Enqueue("t", "p", upload).status());
  ASSERT_OK_AND_ASSIGN(
      ids, scheduler_->EnqueueFlow({Unnamed({"{order-5}:upload"}), Unnamed()}));
  EXPECT_EQ(SharedTag(ids), "order-5");
  // Its own ids come first.
  ASSERT_OK_AND_ASSIGN(
      ids, scheduler_->EnqueueFlow({Unnamed({"{order-5}:upload"}),
                                    Flow("t", "{order-6}:publish")}));
  EXPECT_EQ(SharedTag(ids), "order-6");
}

TEST_F(SchedulerFlowPlacementTest, AFlowTheStoreWouldWriteInPartsIsRefused) {
  const absl::Status refused =
      scheduler_->EnqueueFlow({Flow("t", "a"), Flow("t", "b")}).status();
  EXPECT_THAT(refused, StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(refused.message(), HasSubstr("hash tag"));
  EXPECT_EQ(store_->checks_, 1);
  EXPECT_EQ(store_->adds_, 0) << "asked before anything is written";
  EXPECT_THAT(scheduler_->Get("a"), StatusIs(absl::StatusCode::kNotFound));
  // Plain enqueues are not flows: the store is not asked.
  ASSERT_OK(scheduler_->EnqueueBatch("t", {"x", "y"}).status());
  EXPECT_EQ(store_->checks_, 1);
}

// A flow cancelled from its last job: the job and what it waits for,
// through every level, parents first; a finished dependency stays, and so
// does what only it leads to; a job shared with another flow goes too, and
// that flow's job applies its policy.
TEST_F(SchedulerTest, CancelFlowCancelsAJobAndWhatItWaitsForThatIsLeft) {
  ASSERT_OK(scheduler_
                ->EnqueueFlow({Flow("t", "fetch", {}), Flow("t", "done", {}),
                               Flow("t", "shared", {}),
                               Flow("t", "render", {"fetch", "done"}),
                               Flow("t", "publish", {"render", "shared"}),
                               Flow("t", "other", {"shared"})})
                .status());
  ASSERT_OK_AND_ASSIGN(std::optional<Lease> lease, scheduler_->Reserve("t"));
  while (lease.has_value() && lease->job.id != "done") {
    ASSERT_OK(scheduler_->Release(*lease, absl::Hours(1)));
    ASSERT_OK_AND_ASSIGN(lease, scheduler_->Reserve("t"));
  }
  ASSERT_TRUE(lease.has_value());
  ASSERT_OK(scheduler_->Ack(*lease));

  ASSERT_OK_AND_ASSIGN(std::vector<std::string> cancelled,
                       scheduler_->CancelFlow("publish"));
  EXPECT_THAT(cancelled,
              ::testing::ElementsAre("publish", "render", "shared", "fetch"));
  for (const char* id : {"publish", "render", "shared", "fetch"}) {
    EXPECT_THAT(scheduler_->Get(id), StatusIs(absl::StatusCode::kNotFound))
        << id;
  }
  // "other" waited for "shared" under kFail: dead, not cancelled.
  ASSERT_OK_AND_ASSIGN(Job other, scheduler_->Get("other"));
  EXPECT_EQ(other.state, JobState::kDead);

  EXPECT_THAT(scheduler_->CancelFlow("publish"),
              StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(scheduler_->CancelFlow("other"),
              StatusIs(absl::StatusCode::kFailedPrecondition));
}

// The jobs the store settles in a call's step are told after that call's
// own events: a released dependant as unblocked, one its policy fails as
// dead (with the store's error), one it deletes as cancelled.
TEST_F(SchedulerTest, ListenersHearTheDependantsTheStoreSettles) {
  EventLog log;
  log.Attach(*scheduler_);
  JobOptions a;
  a.id = "a";
  a.max_attempts = 1;
  ASSERT_OK(scheduler_->Enqueue("child", "c", a).status());
  JobOptions b;
  b.id = "b";
  ASSERT_OK(scheduler_->Enqueue("child", "c", b).status());
  JobOptions run = After({"a", "b"});
  run.id = "run";
  run.on_dependency_failure = DependencyFailure::kRun;
  JobOptions fail = After({"a"});
  fail.id = "fail";
  JobOptions drop = After({"a"});
  drop.id = "drop";
  drop.on_dependency_failure = DependencyFailure::kCancel;
  for (const JobOptions& o : {run, fail, drop}) {
    ASSERT_OK(scheduler_->Enqueue("parent", "p", o).status());
  }
  std::vector<Event> heard;
  scheduler_->AddListener([&heard](const Event& e) { heard.push_back(e); });
  log.Take();

  const Lease first = MustReserve("child");
  ASSERT_EQ(first.job.id, "a");
  ASSERT_OK(scheduler_->Fail(first, "boom"));
  std::vector<std::string> told = log.Take();
  ASSERT_EQ(told.size(), 5u);
  EXPECT_THAT(std::vector<std::string>(told.begin(), told.begin() + 3),
              ElementsAre("reserved:a", "failed:a", "dead:a"));
  EXPECT_THAT(std::vector<std::string>(told.begin() + 3, told.end()),
              UnorderedElementsAre("dead:fail", "cancelled:drop"));
  for (const Event& e : heard) {
    if (e.id != "fail") continue;
    EXPECT_EQ(e.topic, "parent");
    EXPECT_THAT(e.error, HasSubstr("'a'"));
  }

  const Lease second = MustReserve("child");
  ASSERT_OK(scheduler_->Ack(second));
  EXPECT_THAT(log.Take(),
              ElementsAre("reserved:b", "succeeded:b", "unblocked:run"));
}

}  // namespace
}  // namespace delayq
