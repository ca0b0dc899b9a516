// Copyright delayq authors.
//
// Threads of one process that reserve or ack at the same moment share a
// script call (backends/redis/call_groups.cc). A group is made for sure:
// the server holds every script (CLIENT PAUSE WRITE) while the first
// caller's call is under way, and the others queue behind it.

#include <string>
#include <thread>
#include <vector>

#include "backends/redis/backend_impl.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/redis/redis_test_server.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/test_job.h"

namespace delayq {
namespace {

using ::delayq::testing::FreshRedisOptions;
using ::delayq::testing::RawCommand;
using ::delayq::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using State = internal::GroupCommit::State;

const absl::Time kT0 = absl::FromUnixSeconds(1'700'000'000);

// The ids of `leases`, in order.
std::vector<std::string> Ids(const std::vector<Lease>& leases) {
  std::vector<std::string> ids;
  for (const Lease& l : leases) ids.push_back(l.job.id);
  return ids;
}

class RedisCallGroupsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    options_ = FreshRedisOptions();
    ASSERT_OK_AND_ASSIGN(backend_, RedisBackend::Open(options_));
    ASSERT_OK(backend_->Add(
        {testing::TestJob("a", "t", kT0), testing::TestJob("b", "t", kT0),
         testing::TestJob("c", "t", kT0)},
        kT0));
  }
  void TearDown() override { Resume(); }

  // Holds every script call the server gets until Resume() (or a minute).
  void Pause() {
    RawCommand(options_.port, {"CLIENT", "PAUSE", "60000", "WRITE"});
  }
  void Resume() { RawCommand(options_.port, {"CLIENT", "UNPAUSE"}); }

  // Runs `call` on a thread of its own, then waits until `state` shows a
  // call under way with `queued` callers behind it.
  template <typename Call, typename StateOf>
  std::thread Start(Call call, StateOf state, size_t queued) {
    std::thread t(call);
    for (;;) {
      const State s = state();
      if (s.leading && s.queued == queued) return t;
      std::this_thread::yield();
    }
  }

  State ReserveState() { return backend_->ReserveGroupStateForTest(); }
  State AckState() { return backend_->AckGroupStateForTest(); }
  State AckReserveState() { return backend_->AckReserveGroupStateForTest(); }

  RedisOptions options_;
  std::unique_ptr<RedisBackend> backend_;
};

TEST_F(RedisCallGroupsTest, ReservationsThatMeetShareACallDealtInQueueOrder) {
  absl::StatusOr<std::vector<Lease>> first, second, third;
  Pause();
  auto state = [&] { return ReserveState(); };
  std::thread t1 =
      Start([&] { first = backend_->Reserve("t", 1, kT0); }, state, 0);
  std::thread t2 =
      Start([&] { second = backend_->Reserve("t", 2, kT0); }, state, 1);
  std::thread t3 =
      Start([&] { third = backend_->Reserve("t", 1, kT0); }, state, 2);
  Resume();
  t1.join();
  t2.join();
  t3.join();
  ASSERT_OK(first.status());
  ASSERT_OK(second.status());
  ASSERT_OK(third.status());
  EXPECT_THAT(Ids(*first), ElementsAre("a"));
  EXPECT_THAT(Ids(*second), ElementsAre("b", "c"));
  // The queue ran dry before the last caller's turn.
  EXPECT_THAT(Ids(*third), IsEmpty());
  EXPECT_NE((*second)[0].token, (*second)[1].token);
  EXPECT_NE((*first)[0].token, (*second)[0].token);
  const State s = ReserveState();
  EXPECT_EQ(s.groups, 2);
  EXPECT_EQ(s.ops, 3);
}

TEST_F(RedisCallGroupsTest, AcksThatMeetShareACallEachWithItsOwnOutcome) {
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases,
                       backend_->Reserve("t", 3, kT0));
  ASSERT_EQ(leases.size(), 3u);
  absl::Status first, second, stale;
  Pause();
  auto state = [&] { return AckState(); };
  std::thread t1 = Start(
      [&] { first = backend_->Ack("a", leases[0].token, "", kT0); }, state, 0);
  std::thread t2 = Start(
      [&] { second = backend_->Ack("b", leases[1].token, "", kT0); }, state, 1);
  std::thread t3 =
      Start([&] { stale = backend_->Ack("c", leases[2].token + 1, "", kT0); },
            state, 2);
  Resume();
  t1.join();
  t2.join();
  t3.join();
  EXPECT_OK(first);
  EXPECT_OK(second);
  EXPECT_THAT(stale, StatusIs(absl::StatusCode::kFailedPrecondition));
  EXPECT_THAT(backend_->Get("b").status(),
              StatusIs(absl::StatusCode::kNotFound));
  ASSERT_OK_AND_ASSIGN(Job c, backend_->Get("c"));
  EXPECT_EQ(c.state, JobState::kReserved);
  const State s = AckState();
  EXPECT_EQ(s.groups, 2);
  EXPECT_EQ(s.ops, 3);
}

TEST_F(RedisCallGroupsTest, AckAndReserveCallsThatMeetAckThenReserveTogether) {
  ASSERT_OK(backend_->Add({testing::TestJob("d", "t", kT0)}, kT0));
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases,
                       backend_->Reserve("t", 2, kT0));
  ASSERT_THAT(Ids(leases), ElementsAre("a", "b"));
  AckReserved first, second, third;
  Pause();
  auto state = [&] { return AckReserveState(); };
  std::thread t1 = Start(
      [&] {
        first = backend_->AckAndReserve("a", leases[0].token, "", "t", 1, kT0,
                                        nullptr);
      },
      state, 0);
  std::thread t2 = Start(
      [&] {
        second = backend_->AckAndReserve("b", leases[1].token, "", "t", 1, kT0,
                                         nullptr);
      },
      state, 1);
  // A lease already ended: its ack is refused, its reservation still goes.
  std::thread t3 = Start(
      [&] {
        third = backend_->AckAndReserve("a", leases[0].token, "", "t", 1, kT0,
                                        nullptr);
      },
      state, 2);
  Resume();
  t1.join();
  t2.join();
  t3.join();
  EXPECT_OK(first.acked);
  EXPECT_OK(second.acked);
  EXPECT_THAT(third.acked, StatusIs(absl::StatusCode::kFailedPrecondition));
  ASSERT_OK(first.leases.status());
  ASSERT_OK(second.leases.status());
  ASSERT_OK(third.leases.status());
  EXPECT_THAT(Ids(*first.leases), ElementsAre("c"));
  EXPECT_THAT(Ids(*second.leases), ElementsAre("d"));
  EXPECT_THAT(Ids(*third.leases), IsEmpty());
  const State s = AckReserveState();
  EXPECT_EQ(s.groups, 2);
  EXPECT_EQ(s.ops, 3);
}

}  // namespace
}  // namespace delayq
