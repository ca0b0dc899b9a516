// Copyright delayq authors.
//
// A PostgreSQL server that stops answering without closing anything (every
// process of it stopped with SIGSTOP: the kernel still accepts and
// acknowledges, as for a frozen host or a network that drops packets
// silently). Calls give up within the store's answer timeout with
// Unavailable instead of hanging, the connections given up on are not
// used again, the news subscription notices and resyncs, and once the
// server goes on the store works again. Each test freezes a server of its
// own, never one another test shares.

#include <future>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "backends/postgres/internal/connection.h"
#include "backends/postgres/internal/pool.h"
#include "delayq/delayq.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/news_recorder.h"
#include "tests/testing/postgres_server.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/test_job.h"

namespace delayq {
namespace {

using ::delayq::testing::NewsRecorder;
using ::delayq::testing::PostgresServer;
using ::delayq::testing::StatusIs;
using ::delayq::testing::TestJob;
using ::testing::HasSubstr;
using ::testing::Not;

const absl::Time kT0 = absl::FromUnixSeconds(1'700'000'000);

// Far longer than the one-second answer timeout the tests set: a call
// that has not returned by then hangs.
constexpr absl::Duration kHang = absl::Seconds(60);

// Runs `call` while `server` is frozen. A call still waiting after kHang
// fails the test: the server is thawed so that the call can end, and its
// status is replaced by one that says it hung.
absl::Status CallFrozen(PostgresServer* server,
                        std::function<absl::Status()> call) {
  std::future<absl::Status> done = std::async(std::launch::async, call);
  if (done.wait_for(absl::ToChronoSeconds(kHang)) ==
      std::future_status::ready) {
    return done.get();
  }
  ADD_FAILURE() << "the call still waits " << kHang << " into a freeze";
  server->Thaw().IgnoreError();
  done.wait();
  return absl::InternalError("hung until the server was thawed");
}

class FrozenServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(server_, PostgresServer::Start());
  }

  // The store's URL, with an answer timeout of a second and a connect
  // timeout of two (the least libpq's whole seconds allow).
  std::string Url() const {
    return absl::StrCat(server_->Url("frozen"),
                        "&answer_timeout_ms=1000&timeout_ms=2000");
  }

  std::unique_ptr<PostgresServer> server_;
};

// Unavailable, naming the server, never its password.
void ExpectUnavailable(const absl::Status& status) {
  EXPECT_THAT(status, StatusIs(absl::StatusCode::kUnavailable));
  EXPECT_THAT(std::string(status.message()), HasSubstr("127.0.0.1"));
  EXPECT_THAT(std::string(status.message()),
              Not(HasSubstr(PostgresServer::password())));
}

// The same, from a call on an open connection given up on.
void ExpectNoAnswer(const absl::Status& status) {
  ExpectUnavailable(status);
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("no answer from the server in 1s"));
}

TEST_F(FrozenServerTest, CallsAreUnavailableThenTheStoreWorksAgain) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Backend> backend, OpenBackend(Url()));
  ASSERT_OK(backend->Add({TestJob("a", "t", kT0)}, kT0));
  ASSERT_OK(server_->Freeze());
  // A read on the open connection; then a write transaction and opening a
  // store, which need a new connection (the one given up on is closed):
  // opening one gives up after libpq's connect_timeout (the store's
  // timeout, two seconds here).
  ExpectNoAnswer(
      CallFrozen(server_.get(), [&] { return backend->Get("a").status(); }));
  ExpectUnavailable(CallFrozen(server_.get(), [&] {
    return backend->Add({TestJob("b", "t", kT0)}, kT0);
  }));
  const absl::Status opened =
      CallFrozen(server_.get(), [&] { return OpenBackend(Url()).status(); });
  ExpectUnavailable(opened);
  EXPECT_THAT(std::string(opened.message()), HasSubstr("cannot connect"));
  ASSERT_OK(server_->Thaw());
  EXPECT_OK(backend->Get("a").status());
  ASSERT_OK(backend->Add({TestJob("c", "t", kT0)}, kT0));
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases,
                       backend->Reserve("t", 10, kT0));
  // "b" may or may not have been stored: its transaction's fate is not
  // known to the caller, as after a lost connection.
  EXPECT_GE(leases.size(), 2u);
}

// A connection given up on may still receive the answer it was waiting
// for, once the server goes on: used again, it would hand that stale
// answer to the next statement.
TEST_F(FrozenServerTest, AConnectionGivenUpOnIsNotReused) {
  using postgres_internal::Connection;
  using postgres_internal::Params;
  using postgres_internal::Pool;
  using postgres_internal::Result;
  Pool pool({{"host", "127.0.0.1"},
             {"port", absl::StrCat(server_->port())},
             {"user", std::string(PostgresServer::kUser)},
             {"password", std::string(PostgresServer::password())},
             {"dbname", "postgres"}},
            "postgres (test pool)", absl::Seconds(1), /*max_idle=*/4);
  bool reused = false;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Connection> conn, pool.Take(&reused));
  ASSERT_OK(conn->Run("SELECT 1"));
  pool.Give(std::move(conn));
  // A sound connection is kept and handed out again.
  ASSERT_OK_AND_ASSIGN(conn, pool.Take(&reused));
  EXPECT_TRUE(reused);

  ASSERT_OK(server_->Freeze());
  absl::Status asked = CallFrozen(server_.get(), [&] {
    return conn->Exec("SELECT $1::int", Params().Int(41)).status();
  });
  EXPECT_THAT(asked, StatusIs(absl::StatusCode::kUnavailable));
  EXPECT_TRUE(conn->Broken());
  EXPECT_FALSE(conn->FoundClosed());
  pool.Give(std::move(conn));
  ASSERT_OK(server_->Thaw());

  ASSERT_OK_AND_ASSIGN(conn, pool.Take(&reused));
  EXPECT_FALSE(reused);
  ASSERT_OK_AND_ASSIGN(Result r,
                       conn->Exec("SELECT $1::int", Params().Int(42)));
  ASSERT_EQ(r.rows(), 1);
  EXPECT_EQ(r.Int(0, 0), 42);
}

// The subscription's connection waits for news and sends nothing: a
// frozen server looks just like a quiet one until it asks for a sign of
// life.
TEST_F(FrozenServerTest, TheSubscriptionNoticesAndResyncsWhenItIsBack) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Backend> backend, OpenBackend(Url()));
  NewsRecorder recorder(kT0);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<NewsSubscription> subscription,
                       backend->Subscribe(recorder.Callback()));
  ASSERT_OK(backend->Add({TestJob("a", "t", kT0)}, kT0));
  ASSERT_EQ(recorder.Next(), NewsRecorder::Ready("t"));
  ASSERT_OK(server_->Freeze());
  // The subscription notices within two answer timeouts (a quiet one,
  // then one without an answer); the freeze lasts several times that.
  absl::SleepFor(absl::Seconds(8));
  ASSERT_OK(server_->Thaw());
  EXPECT_EQ(recorder.Next(absl::Seconds(30)), NewsRecorder::Resync());
  ASSERT_OK(backend->Add({TestJob("b", "u", kT0)}, kT0));
  EXPECT_EQ(recorder.Next(absl::Seconds(30)), NewsRecorder::Ready("u"));
}

// A URL of several hosts is for a server that may not answer: opening a
// connection gives up on a frozen first host after connect_timeout and
// goes on to the next, as libpq does with such a URL.
TEST_F(FrozenServerTest, AFrozenFirstHostGivesWayToTheNext) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<PostgresServer> second,
                       PostgresServer::Start());
  ASSERT_OK(server_->Freeze());
  const std::string url = absl::StrCat(
      "postgres://", PostgresServer::kUser, ":", PostgresServer::password(),
      "@127.0.0.1:", server_->port(), ",127.0.0.1:", second->port(),
      "/postgres?schema=frozen&answer_timeout_ms=1000&timeout_ms=2000");
  absl::StatusOr<std::unique_ptr<Backend>> backend;
  const absl::Status opened = CallFrozen(server_.get(), [&] {
    backend = OpenBackend(url);
    return backend.status();
  });
  ASSERT_OK(opened);
  ASSERT_OK((*backend)->Add({TestJob("a", "t", kT0)}, kT0));
  ASSERT_OK_AND_ASSIGN(Job job, (*backend)->Get("a"));
  EXPECT_EQ(job.topic, "t");
  ASSERT_OK(server_->Thaw());
}

}  // namespace
}  // namespace delayq
