// Copyright delayq authors.
//
// News of the SQLite store (Backend::Subscribe()): the news conformance
// suite (tests/conformance/news_conformance.h) on a file, and what only this
// store does: a late subscriber hears the horizon first, and the socket
// folder's housekeeping, checked with real child processes.

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
#include "tests/conformance/news_conformance.h"
#include "tests/testing/news_recorder.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_path.h"
#include "tests/testing/test_job.h"
#include "tests/testing/worker_process.h"

namespace delayq {
namespace {

using ::delayq::testing::NewsConformanceTest;
using ::delayq::testing::NewsPair;
using ::delayq::testing::NewsRecorder;
using ::delayq::testing::NewsStore;
using ::delayq::testing::TestJob;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

const absl::Time kT0 = absl::FromUnixSeconds(1'700'000'000);
const auto Ready = NewsRecorder::Ready;
const auto Due = NewsRecorder::Due;

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

NewsPair OpenPair() {
  const std::string path = testing::FreshDbPath("news");
  return NewsPair{Open(path), Open(path), path};
}

const NewsStore kSqliteNews{"sqlite", OpenPair};
std::string Name(const ::testing::TestParamInfo<NewsStore>& info) {
  return info.param.name;
}

INSTANTIATE_TEST_SUITE_P(Sqlite, NewsConformanceTest,
                         ::testing::Values(kSqliteNews), Name);

// What only the SQLite store does: its socket folder, and a late
// subscriber told the horizon first.
class SqliteNewsTest : public NewsConformanceTest {};
INSTANTIATE_TEST_SUITE_P(Sqlite, SqliteNewsTest, ::testing::Values(kSqliteNews),
                         Name);

// A subscriber that comes later is told the horizon first: it knows what
// the others were told, so later due times that are not news reach it too.
TEST_P(SqliteNewsTest, ANewSubscriberHearsTheHorizonFirst) {
  ASSERT_OK(store_->Add({MakeJob("d60", "t", kT0 + absl::Seconds(60))}, kT0));
  EXPECT_EQ(recorder_.Next(), Due(absl::Seconds(60)));
  NewsRecorder late(kT0);
  ASSERT_OK_AND_ASSIGN(auto late_subscription,
                       subscriber_->Subscribe(late.Callback()));
  EXPECT_EQ(late.Next(), Due(absl::Seconds(60)));
}

TEST_P(SqliteNewsTest, TheFolderIsPrivateAndTheSocketGoesWithTheSubscription) {
  struct stat st;
  ASSERT_EQ(stat((where_ + "-news").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700);
  EXPECT_EQ(Sockets(where_), 1);
  const absl::Time before = absl::Now();
  subscription_.reset();
  EXPECT_LT(absl::Now() - before, absl::Seconds(1));
  EXPECT_EQ(Sockets(where_), 0);
}

// A subscriber killed with SIGKILL leaves its socket behind; the next news
// finds nobody listening there and removes it.
TEST_P(SqliteNewsTest, ADeadSubscribersSocketIsRemovedByTheNextSender) {
  auto child = testing::WorkerProcess::Start("sqlite:" + where_);
  ASSERT_NE(child, nullptr);
  ASSERT_OK(child->Run("subscribe"));
  ASSERT_EQ(Sockets(where_), 2);
  child->Kill();
  EXPECT_EQ(Sockets(where_), 2);
  ASSERT_OK(store_->Add({MakeJob("a", "t")}, kT0));
  EXPECT_EQ(recorder_.Next(), Ready("t"));
  EXPECT_EQ(Sockets(where_), 1);
}

// A subscriber whose socket was taken away rebinds and says news may have
// been lost.
TEST_P(SqliteNewsTest, ASubscriberWhoseSocketIsGoneRebindsAndResyncs) {
  const std::string folder = where_ + "-news";
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
  ASSERT_OK(store->Add({TestJob("a", "t", kT0)}, kT0));
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
