// Copyright delayq authors.
//
// News of the SQLite store (Backend::Subscribe()): one backend subscribes, a
// second one on the same file, as another process would, changes the store,
// and the news must arrive — edges only, with the exact times. "No news" is
// checked without sleeping: a sentinel job on a fresh topic is added after
// the change, and its kReady must be the next news. The socket folder's
// housekeeping is checked with real child processes.

#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "delayq/scheduler.h"
#include "delayq/sqlite_backend.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/sqlite/temp_path.h"
#include "tests/testing/news_recorder.h"
#include "tests/testing/status_matchers.h"

namespace delayq {
namespace {

using ::delayq::testing::NewsRecorder;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

const absl::Time kT0 = absl::FromUnixSeconds(1'700'000'000);
const auto Ready = NewsRecorder::Ready;
const auto Due = NewsRecorder::Due;

NewJob MakeJob(std::string id, std::string topic, absl::Time run_at = kT0,
               absl::Duration ttr = absl::Seconds(30), int max_attempts = 3) {
  NewJob j;
  j.id = std::move(id);
  j.topic = std::move(topic);
  j.payload = "p";
  j.run_at = run_at;
  j.ttr = ttr;
  j.max_attempts = max_attempts;
  return j;
}

std::unique_ptr<Backend> Open(const std::string& path) {
  SqliteOptions options;
  options.path = path;
  absl::StatusOr<std::unique_ptr<Backend>> b = OpenSqliteBackend(options);
  EXPECT_TRUE(b.ok()) << b.status();
  return b.ok() ? *std::move(b) : nullptr;
}

// Entries in the news folder of `path`.
int Sockets(const std::string& path) {
  int n = 0;
  const std::string folder = path + "-news";
  if (DIR* d = opendir(folder.c_str())) {
    while (dirent* e = readdir(d)) n += e->d_name[0] != '.';
    closedir(d);
  }
  return n;
}

class SqliteNewsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = testing::FreshDbPath("news");
    subscriber_ = Open(path_);
    store_ = Open(path_);
    ASSERT_NE(subscriber_, nullptr);
    ASSERT_NE(store_, nullptr);
    ASSERT_OK_AND_ASSIGN(subscription_,
                         subscriber_->Subscribe(recorder_.Callback()));
    ASSERT_NE(subscription_, nullptr);
  }

  void TearDown() override { subscription_.reset(); }

  // Every news that arrives before a sentinel added now, in order.
  std::vector<std::string> Settle() {
    const std::string topic = absl::StrCat("sentinel-", ++sentinels_);
    EXPECT_OK(store_->Add({MakeJob(topic, topic)}, kT0));
    std::vector<std::string> before;
    for (;;) {
      std::string n = recorder_.Next();
      if (n.empty()) {
        ADD_FAILURE() << "the sentinel's news did not come";
        return before;
      }
      if (n == Ready(topic)) return before;
      before.push_back(n);
    }
  }

  Lease ReserveOne(absl::string_view topic, absl::Time now) {
    absl::StatusOr<std::vector<Lease>> leases = store_->Reserve(topic, 1, now);
    EXPECT_OK(leases.status());
    if (!leases.ok() || leases->size() != 1) {
      ADD_FAILURE() << "nothing to reserve in " << topic;
      return Lease();
    }
    return (*leases)[0];
  }

  std::string path_;
  std::unique_ptr<Backend> subscriber_;
  std::unique_ptr<Backend> store_;  // "another process"
  NewsRecorder recorder_{kT0};
  std::unique_ptr<NewsSubscription> subscription_;
  int sentinels_ = 0;
};

TEST_F(SqliteNewsTest, ReadyIsAnnouncedOnlyWhenTheReadySetWasEmpty) {
  ASSERT_OK(store_->Add({MakeJob("a", "t")}, kT0));
  EXPECT_EQ(recorder_.Next(), Ready("t"));
  ASSERT_OK(store_->Add({MakeJob("b", "t")}, kT0));
  EXPECT_THAT(Settle(), IsEmpty()) << "t already had a ready job";
  // One announcement per topic per call, however many jobs it adds.
  ASSERT_OK(store_->Add({MakeJob("c", "u"), MakeJob("d", "u"),
                         MakeJob("e", "t"), MakeJob("f", "v")},
                        kT0));
  std::vector<std::string> news = Settle();
  EXPECT_THAT(news, ::testing::UnorderedElementsAre(Ready("u"), Ready("v")));
}

TEST_F(SqliteNewsTest, DueIsAnnouncedWhenEarlierThanTheHorizon) {
  ASSERT_OK(store_->Add({MakeJob("d60", "t", kT0 + absl::Seconds(60))}, kT0));
  EXPECT_EQ(recorder_.Next(), Due(absl::Seconds(60)));
  ASSERT_OK(store_->Add({MakeJob("d120", "t", kT0 + absl::Seconds(120))}, kT0));
  EXPECT_THAT(Settle(), IsEmpty()) << "later than what subscribers know";
  // A batch announces its earliest run_at, once.
  ASSERT_OK(store_->Add({MakeJob("d40", "t", kT0 + absl::Seconds(40)),
                         MakeJob("d30", "t", kT0 + absl::Seconds(30)),
                         MakeJob("d50", "t", kT0 + absl::Seconds(50))},
                        kT0));
  EXPECT_THAT(Settle(), ElementsAre(Due(absl::Seconds(30))));
  // A horizon that has passed says nothing: the next time stored is news
  // even though it is later.
  ASSERT_OK(store_->Add({MakeJob("d200", "t", kT0 + absl::Seconds(200))},
                        kT0 + absl::Seconds(31)));
  EXPECT_THAT(Settle(), ElementsAre(Due(absl::Seconds(200))));
}

// A subscriber that comes later is told the horizon first: it knows what
// the others were told, so later due times that are not news reach it too.
TEST_F(SqliteNewsTest, ANewSubscriberHearsTheHorizonFirst) {
  ASSERT_OK(store_->Add({MakeJob("d60", "t", kT0 + absl::Seconds(60))}, kT0));
  EXPECT_EQ(recorder_.Next(), Due(absl::Seconds(60)));
  NewsRecorder late(kT0);
  ASSERT_OK_AND_ASSIGN(auto late_subscription,
                       subscriber_->Subscribe(late.Callback()));
  EXPECT_EQ(late.Next(), Due(absl::Seconds(60)));
}

TEST_F(SqliteNewsTest, PromotionAndExpiryIntoAnEmptyReadySetAreAnnounced) {
  ASSERT_OK(store_->Add({MakeJob("p", "t", kT0 + absl::Seconds(10))}, kT0));
  EXPECT_EQ(recorder_.Next(), Due(absl::Seconds(10)));
  ASSERT_OK_AND_ASSIGN(PromoteResult r,
                       store_->PromoteDue(kT0 + absl::Seconds(10), 10));
  ASSERT_EQ(r.transitions.size(), 1u);
  EXPECT_EQ(recorder_.Next(), Ready("t"));

  // The lease's deadline is news too (the horizon at +10 s has passed).
  ReserveOne("t", kT0 + absl::Seconds(10));
  EXPECT_EQ(recorder_.Next(), Due(absl::Seconds(40)));
  ASSERT_OK_AND_ASSIGN(r, store_->PromoteDue(kT0 + absl::Seconds(40), 10));
  ASSERT_EQ(r.transitions.size(), 1u);
  EXPECT_EQ(r.transitions[0].kind, Transition::Kind::kExpired);
  EXPECT_EQ(recorder_.Next(), Ready("t"));

  // Reserve() promotes its topic's due jobs itself; what it leaves ready
  // is news.
  ASSERT_OK(store_->Add({MakeJob("q1", "u", kT0 + absl::Seconds(50)),
                         MakeJob("q2", "u", kT0 + absl::Seconds(50))},
                        kT0 + absl::Seconds(41)));
  EXPECT_EQ(recorder_.Next(), Due(absl::Seconds(50)));
  std::vector<Transition> moved;
  ASSERT_OK_AND_ASSIGN(
      std::vector<Lease> leases,
      store_->Reserve("u", 1, kT0 + absl::Seconds(60), &moved));
  ASSERT_EQ(moved.size(), 2u);
  ASSERT_EQ(leases.size(), 1u);
  EXPECT_THAT(Settle(), ElementsAre(Ready("u"), Due(absl::Seconds(90))));
}

TEST_F(SqliteNewsTest, RetriesReleasesAndKicksAreAnnounced) {
  ASSERT_OK(store_->Add({MakeJob("a", "t")}, kT0));
  EXPECT_EQ(recorder_.Next(), Ready("t"));
  Lease l = ReserveOne("t", kT0);
  EXPECT_EQ(recorder_.Next(), Due(absl::Seconds(30)));
  ASSERT_OK_AND_ASSIGN(FailOutcome out,
                       store_->Fail("a", l.token, "boom", kT0, kT0));
  ASSERT_EQ(out, FailOutcome::kRetry);
  EXPECT_EQ(recorder_.Next(), Ready("t"));
  l = ReserveOne("t", kT0);
  ASSERT_OK(store_->Release("a", l.token, kT0, kT0));
  EXPECT_EQ(recorder_.Next(), Ready("t"));
  // A delayed retry earlier than the horizon (+30 s) is due news.
  l = ReserveOne("t", kT0);
  ASSERT_OK_AND_ASSIGN(
      out, store_->Fail("a", l.token, "boom", kT0 + absl::Seconds(3), kT0));
  ASSERT_EQ(out, FailOutcome::kRetry);
  EXPECT_EQ(recorder_.Next(), Due(absl::Seconds(3)));
  // So is a delayed release.
  ASSERT_OK(store_->Add({MakeJob("b", "u")}, kT0));
  EXPECT_EQ(recorder_.Next(), Ready("u"));
  l = ReserveOne("u", kT0);
  ASSERT_OK(store_->Release("b", l.token, kT0 + absl::Seconds(2), kT0));
  EXPECT_THAT(Settle(), ElementsAre(Due(absl::Seconds(2))));

  // Kicks of dead jobs.
  ASSERT_OK(store_->Add({MakeJob("x", "k", kT0, absl::Seconds(30), 1),
                         MakeJob("y", "k", kT0, absl::Seconds(30), 1)},
                        kT0));
  EXPECT_EQ(recorder_.Next(), Ready("k"));
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> two,
                       store_->Reserve("k", 2, kT0 + absl::Seconds(1)));
  ASSERT_EQ(two.size(), 2u);
  for (const Lease& d : two) {
    ASSERT_OK_AND_ASSIGN(out, store_->Fail(d.job.id, d.token, "boom", kT0,
                                           kT0 + absl::Seconds(1)));
    ASSERT_EQ(out, FailOutcome::kDead);
  }
  EXPECT_THAT(Settle(), IsEmpty()) << "deaths are no news";
  ASSERT_OK(store_->KickJob("x", kT0 + absl::Seconds(1)));
  EXPECT_EQ(recorder_.Next(), Ready("k"));
  ReserveOne("k", kT0 + absl::Seconds(1));
  ASSERT_OK_AND_ASSIGN(int kicked, store_->Kick("k", 10, kT0));
  EXPECT_EQ(kicked, 1);
  EXPECT_THAT(Settle(), ElementsAre(Ready("k")));
}

TEST_F(SqliteNewsTest, TheFolderIsPrivateAndTheSocketGoesWithTheSubscription) {
  struct stat st;
  ASSERT_EQ(stat((path_ + "-news").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700);
  EXPECT_EQ(Sockets(path_), 1);
  const absl::Time before = absl::Now();
  subscription_.reset();
  EXPECT_LT(absl::Now() - before, absl::Seconds(1));
  EXPECT_EQ(Sockets(path_), 0);
}

// A subscriber killed with SIGKILL leaves its socket behind; the next news
// finds nobody listening there and removes it.
TEST_F(SqliteNewsTest, ADeadSubscribersSocketIsRemovedByTheNextSender) {
  const pid_t child = fork();
  if (child == 0) {
    std::unique_ptr<Backend> b = Open(path_);
    NewsRecorder r(kT0);
    auto s = b->Subscribe(r.Callback());
    if (!s.ok()) _exit(2);
    (void)!write(STDOUT_FILENO, "", 0);
    pause();
    _exit(0);
  }
  ASSERT_GT(child, 0);
  const absl::Time give_up = absl::Now() + absl::Seconds(10);
  while (Sockets(path_) < 2 && absl::Now() < give_up) {
    absl::SleepFor(absl::Milliseconds(1));
  }
  ASSERT_EQ(Sockets(path_), 2);
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  EXPECT_EQ(Sockets(path_), 2);
  ASSERT_OK(store_->Add({MakeJob("a", "t")}, kT0));
  EXPECT_EQ(recorder_.Next(), Ready("t"));
  EXPECT_EQ(Sockets(path_), 1);
}

// A subscriber whose socket was taken away rebinds and says news may have
// been lost.
TEST_F(SqliteNewsTest, ASubscriberWhoseSocketIsGoneRebindsAndResyncs) {
  const std::string folder = path_ + "-news";
  DIR* d = opendir(folder.c_str());
  ASSERT_NE(d, nullptr);
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] != '.') unlinkat(dirfd(d), e->d_name, 0);
  }
  closedir(d);
  EXPECT_EQ(recorder_.Next(absl::Seconds(15)), NewsRecorder::Resync());
  ASSERT_OK(store_->Add({MakeJob("a", "t")}, kT0));
  EXPECT_EQ(recorder_.Next(), Ready("t"));
}

// sun_path holds 107 bytes; a database path far longer still works.
TEST(SqliteNewsPathTest, APathLongerThanASocketAddressWorks) {
  std::string dir = testing::TempDir();
  for (int i = 0; i < 4; ++i) {
    dir += "/a-folder-with-a-rather-long-name-to-make-the-path-long";
    mkdir(dir.c_str(), 0700);
  }
  const std::string path = dir + "/jobs.db";
  ASSERT_GT(path.size(), 200u);
  std::unique_ptr<Backend> subscriber = Open(path);
  std::unique_ptr<Backend> store = Open(path);
  NewsRecorder recorder(kT0);
  ASSERT_OK_AND_ASSIGN(auto subscription,
                       subscriber->Subscribe(recorder.Callback()));
  ASSERT_OK(store->Add({MakeJob("a", "t")}, kT0));
  EXPECT_EQ(recorder.Next(), Ready("t"));
}

// Where the news folder cannot be had (here a file stands in its way; a
// read-only place does the same), Subscribe() says why, and a scheduler on
// the file still works, looking at the store every poll_interval.
TEST(SqliteNewsPathTest, NoNewsWhereTheFolderCannotBeMade) {
  const std::string path = testing::FreshDbPath("nonews");
  FILE* blocker = fopen((path + "-news").c_str(), "w");
  ASSERT_NE(blocker, nullptr);
  fclose(blocker);
  std::unique_ptr<Backend> store = Open(path);
  NewsRecorder recorder(kT0);
  absl::StatusOr<std::unique_ptr<NewsSubscription>> subscription =
      store->Subscribe(recorder.Callback());
  ASSERT_FALSE(subscription.ok());
  EXPECT_THAT(subscription.status().message(),
              ::testing::HasSubstr(path + "-news"));
  ASSERT_OK_AND_ASSIGN(auto scheduler, Scheduler::Create(std::move(store)));
  ASSERT_OK(scheduler->Enqueue("t", "p").status());
}

}  // namespace
}  // namespace delayq
