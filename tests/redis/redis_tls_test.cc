// Copyright delayq authors.
//
// The Redis store over TLS, on a real redis-server that speaks TLS on one
// port (and plain RESP on another, which only the fixture's readiness check
// uses), with a CA and certificates made by openssl when the test starts.
// The conformance, news and multi-process suites run over TLS; then what
// TLS adds: the server's certificate is checked by default (its CA and its
// name), a client certificate is sent when the server asks for one, and
// files that cannot be used are named.

#include <atomic>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "delayq/open.h"
#include "delayq/redis_backend.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/conformance/backend_conformance.h"
#include "tests/conformance/news_conformance.h"
#include "tests/multiprocess/multiprocess_suite.h"
#include "tests/redis/redis_test_server.h"
#include "tests/testing/redis_server.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/test_job.h"
#include "tests/testing/tls_files.h"

namespace delayq {
namespace {

using ::delayq::testing::BackendConformanceTest;
using ::delayq::testing::MultiProcessTest;
using ::delayq::testing::NewsConformanceTest;
using ::delayq::testing::RedisServer;
using ::delayq::testing::StatusIs;
using ::delayq::testing::TlsFiles;
using ::delayq::testing::WakeupTest;
using ::testing::HasSubstr;

const absl::Time kT0 = absl::FromUnixSeconds(1'800'000'000);

// The binary's certificates and TLS server, made on first use. A failure
// aborts the binary with the reason: the tests must fail, not skip.
struct TlsSetup {
  TlsFiles files;
  std::unique_ptr<RedisServer> server;
};

const TlsSetup& Shared() {
  static const TlsSetup* setup = [] {
    auto* s = new TlsSetup;
    absl::StatusOr<TlsFiles> files = testing::MakeTlsFiles();
    if (!files.ok()) {
      fprintf(stderr, "FATAL: %s\n", files.status().ToString().c_str());
      abort();
    }
    s->files = *files;
    absl::StatusOr<std::unique_ptr<RedisServer>> server =
        RedisServer::StartTls(s->files);
    if (!server.ok()) {
      fprintf(stderr, "FATAL: cannot start redis-server with TLS: %s\n",
              server.status().ToString().c_str());
      abort();
    }
    s->server = *std::move(server);
    return s;
  }();
  return *setup;
}

std::string FreshNamespace() {
  static std::atomic<int> counter{0};
  return absl::StrCat("tls", getpid(), "-", counter.fetch_add(1));
}

// A store on the shared server's TLS port, verified against the test CA.
// "localhost" resolves to ::1 too, where nothing listens: the store must
// go on to 127.0.0.1.
RedisOptions TlsOptions(int port = 0) {
  RedisOptions o;
  o.host = "localhost";
  o.port = port != 0 ? port : Shared().server->tls_port();
  o.ns = FreshNamespace();
  o.max_clock_skew = absl::InfiniteDuration();
  o.tls.enabled = true;
  o.tls.ca_file = Shared().files.ca_cert;
  return o;
}

std::string TlsUrl() {
  return absl::StrCat("rediss://localhost:", Shared().server->tls_port(),
                      "?namespace=", FreshNamespace(),
                      "&max_skew_ms=off&tls_ca_file=", Shared().files.ca_cert);
}

INSTANTIATE_TEST_SUITE_P(RedisTls, BackendConformanceTest,
                         ::testing::Values(testing::BackendFactory{
                             "redis_tls",
                             []() -> absl::StatusOr<std::unique_ptr<Backend>> {
                               return OpenRedisBackend(TlsOptions());
                             },
                             /*limit_share=*/nullptr, /*model_steps=*/600}),
                         testing::BackendFactoryName);

testing::NewsPair OpenTlsNewsPair() {
  const RedisOptions options = TlsOptions();
  return testing::OpenNewsPair([&] { return OpenRedisBackend(options); },
                               options.ns);
}

INSTANTIATE_TEST_SUITE_P(
    RedisTls, NewsConformanceTest,
    ::testing::Values(testing::NewsStore{"redis_tls", OpenTlsNewsPair}),
    [](const ::testing::TestParamInfo<testing::NewsStore>& info) {
      return info.param.name;
    });

const testing::SharedStore kTlsStore{"redis_tls", TlsUrl};
INSTANTIATE_TEST_SUITE_P(RedisTls, MultiProcessTest,
                         ::testing::Values(kTlsStore),
                         testing::SharedStoreName);
INSTANTIATE_TEST_SUITE_P(RedisTls, WakeupTest, ::testing::Values(kTlsStore),
                         testing::SharedStoreName);

NewJob MailJob(const std::string& id) {
  return testing::PlainJob(id, "mail", kT0);
}

// Adds a job and reads it back: the connection carries calls both ways.
void ExpectWorks(const RedisOptions& options) {
  absl::StatusOr<std::unique_ptr<Backend>> store = OpenRedisBackend(options);
  ASSERT_OK(store.status());
  ASSERT_OK((*store)->Add({MailJob("j1")}, kT0));
  absl::StatusOr<Job> got = (*store)->Get("j1");
  ASSERT_OK(got.status());
  EXPECT_EQ(got->payload, "p");
}

TEST(RedisTlsTest, ReachesTheServerByNameAndByAddress) {
  ExpectWorks(TlsOptions());
  RedisOptions by_address = TlsOptions();
  by_address.host = "127.0.0.1";  // the certificate lists the address
  ExpectWorks(by_address);
}

TEST(RedisTlsTest, TheServersCertificateIsCheckedByDefault) {
  RedisOptions system_cas = TlsOptions();
  system_cas.tls.ca_file.clear();  // the test CA is not in the system store
  const absl::Status refused = OpenRedisBackend(system_cas).status();
  EXPECT_THAT(refused, StatusIs(absl::StatusCode::kFailedPrecondition));
  EXPECT_THAT(refused.message(), HasSubstr("certificate was refused"));
  EXPECT_THAT(refused.message(), HasSubstr("tls_ca_file"));
}

TEST(RedisTlsTest, ACertificateForAnotherNameIsRefused) {
  RedisOptions other_name = TlsOptions();
  other_name.tls.server_name = "redis.example.com";
  EXPECT_THAT(OpenRedisBackend(other_name).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition));
  RedisOptions right_name = TlsOptions();
  right_name.host = "127.0.0.1";
  right_name.tls.server_name = "localhost";
  ExpectWorks(right_name);
}

TEST(RedisTlsTest, InsecureSkipsTheChecksButStillEncrypts) {
  RedisOptions insecure = TlsOptions();
  insecure.tls.ca_file.clear();
  insecure.tls.server_name = "redis.example.com";
  insecure.tls.insecure = true;
  ExpectWorks(insecure);
}

TEST(RedisTlsTest, AClientCertificateIsSentWhenTheServerAsksForOne) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RedisServer> strict,
                       RedisServer::StartTls(Shared().files, "yes"));
  RedisOptions without = TlsOptions(strict->tls_port());
  EXPECT_FALSE(OpenRedisBackend(without).ok());
  RedisOptions with = TlsOptions(strict->tls_port());
  with.tls.cert_file = Shared().files.client_cert;
  with.tls.key_file = Shared().files.client_key;
  ExpectWorks(with);
}

TEST(RedisTlsTest, FilesThatCannotBeUsedAreNamed) {
  RedisOptions missing = TlsOptions();
  missing.tls.ca_file = "/no/such/ca.pem";
  const absl::Status no_ca = OpenRedisBackend(missing).status();
  EXPECT_THAT(no_ca, StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(no_ca.message(), HasSubstr("/no/such/ca.pem"));

  RedisOptions mismatched = TlsOptions();
  mismatched.tls.cert_file = Shared().files.client_cert;
  mismatched.tls.key_file = Shared().files.server_key;
  const absl::Status wrong_key = OpenRedisBackend(mismatched).status();
  EXPECT_THAT(wrong_key, StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(wrong_key.message(), HasSubstr("tls_key_file"));
  EXPECT_THAT(wrong_key.message(), HasSubstr(Shared().files.server_key));

  RedisOptions half = TlsOptions();
  half.tls.cert_file = Shared().files.client_cert;
  EXPECT_THAT(OpenRedisBackend(half).status(),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(RedisTlsTest, TlsAndPlainPortsDoNotMix) {
  RedisOptions plain = TlsOptions();
  plain.tls = RedisTls{};
  plain.connect_timeout = absl::Milliseconds(500);
  plain.command_timeout = absl::Milliseconds(500);
  // The TLS port reads our RESP as a broken handshake and hangs up (or says
  // nothing): never a store.
  EXPECT_FALSE(OpenRedisBackend(plain).ok());
  // A plain port takes the TLS hello for the start of a command and waits
  // for the rest: the handshake runs out of time, and says what may be
  // wrong.
  RedisOptions tls_to_plain = TlsOptions(Shared().server->port());
  tls_to_plain.connect_timeout = absl::Milliseconds(500);
  const absl::Status no_tls = OpenRedisBackend(tls_to_plain).status();
  EXPECT_THAT(no_tls, StatusIs(absl::StatusCode::kDeadlineExceeded));
  EXPECT_THAT(no_tls.message(), HasSubstr("does this port speak TLS?"));
}

TEST(RedisTlsTest, AUrlOpensATlsStore) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Backend> store, OpenBackend(TlsUrl()));
  ASSERT_OK(store->Add({MailJob("u1")}, kT0));
  EXPECT_OK(store->Get("u1").status());
}

TEST(RedisTlsTest, CallsResumeOverNewConnectionsAfterTheServerRestarts) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RedisServer> server,
                       RedisServer::StartTls(Shared().files));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Backend> store,
                       OpenRedisBackend(TlsOptions(server->tls_port())));
  ASSERT_OK(store->Add({MailJob("before")}, kT0));
  ASSERT_OK(server->Restart());
  // The pool's connections died with the server; an idle one is found
  // closed before use and replaced, over TLS again.
  ASSERT_OK(store->Add({MailJob("after")}, kT0));
  EXPECT_OK(store->Get("after").status());
}

// rediss+sentinel://: the sentinel, the primary it names and, after a
// failover, the replica it promotes, all reached over TLS.
TEST(RedisTlsSentinelTest, SentinelAndPrimariesAreReachedOverTls) {
  const TlsFiles& files = Shared().files;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RedisServer> primary,
                       RedisServer::StartTls(files));
  // tls-replication: the replica reaches its primary over TLS, and
  // announces its TLS port, which the sentinel then names.
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RedisServer> replica,
                       RedisServer::StartTls(files, "no",
                                             {"--replicaof", "127.0.0.1",
                                              absl::StrCat(primary->tls_port()),
                                              "--tls-replication", "yes"}));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RedisServer> sentinel,
                       RedisServer::StartSentinel(
                           "tls-primary", primary->tls_port(), 1, &files));
  const auto sentinel_says = [&](const std::string& field) {
    const std::vector<std::string> info = testing::RawCommand(
        sentinel->port(), {"SENTINEL", "MASTER", "tls-primary"});
    for (size_t i = 0; i + 1 < info.size(); i += 2) {
      if (info[i] == field) return info[i + 1];
    }
    return std::string();
  };
  const absl::Time patience = absl::Now() + absl::Seconds(30);
  while (sentinel_says("num-slaves") != "1" ||
         !testing::ReplicaCaughtUp(primary->port())) {
    ASSERT_LT(absl::Now(), patience) << "the sentinel did not find the replica";
    absl::SleepFor(absl::Milliseconds(100));
  }
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Backend> store,
                       OpenBackend(absl::StrCat(
                           "rediss+sentinel://localhost:", sentinel->tls_port(),
                           "/tls-primary?namespace=", FreshNamespace(),
                           "&max_skew_ms=off&timeout_ms=500"
                           "&tls_ca_file=",
                           files.ca_cert)));
  ASSERT_OK(store->Add({MailJob("before")}, kT0));
  // Acknowledged by the replica, so the failover keeps it: replication is
  // asynchronous, and a forced failover does not wait for it.
  while (!testing::ReplicaCaughtUp(primary->port())) {
    ASSERT_LT(absl::Now(), patience) << "the replica did not catch up";
    absl::SleepFor(absl::Milliseconds(10));
  }

  ASSERT_EQ(testing::RawCommand(sentinel->port(),
                                {"SENTINEL", "FAILOVER", "tls-primary"})
                .at(0),
            "OK");
  while (sentinel_says("port") != absl::StrCat(replica->tls_port())) {
    ASSERT_LT(absl::Now(), patience) << "the sentinel did not fail over";
    absl::SleepFor(absl::Milliseconds(100));
  }
  absl::Status added;
  do {
    added = store->Add({MailJob("after")}, kT0);
    if (added.ok()) break;
    ASSERT_TRUE(absl::IsUnavailable(added) || absl::IsDeadlineExceeded(added))
        << added;
    absl::SleepFor(absl::Milliseconds(100));
  } while (absl::Now() < patience);
  ASSERT_OK(added);
  EXPECT_EQ(testing::RawCommand(replica->port(), {"ROLE"}).at(0), "master");
  EXPECT_OK(store->Get("before").status());
}

}  // namespace
}  // namespace delayq
