// Copyright delayq authors.
//
// The HTTP server of `delayq serve` over a store that fails and stalls on
// a seeded schedule: the server runs in this process on a scheduler over
// FaultyBackend, on loopback port 0, on the simulated clock, and one client
// adds, reserves, acks, fails, releases, touches, reads and deletes jobs
// over HTTP. The client makes one request at a time and the server calls
// the store only for requests (no worker threads run), so every injection
// belongs to the request that was in flight.
//
// Checked for every seed, on the memory store and on a SQLite file:
//   * every request gets a reply (no crash, no hang: the client gives up
//     after 10 s), never a 500;
//   * a request during which a store call failed gets an error reply, and
//     503 / 504 come back only with the injected UNAVAILABLE /
//     DEADLINE_EXCEEDED and only when something was injected;
//   * nothing is lost: once faults stop, every job the store ever held is
//     reserved and acked over HTTP, and the store ends empty;
//   * no job is held by two live leases at once.

#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "delayq/delayq.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "nlohmann/json.hpp"
#include "tests/faults/fault_harness.h"
#include "tests/testing/faulty_backend.h"
#include "tests/testing/status_matchers.h"
#include "tools/serve/server.h"

namespace delayq {
namespace testing {
namespace {

using Json = nlohmann::json;

const absl::Time kStart = absl::FromUnixSeconds(1'700'000'000);
constexpr int kSteps = 250;

// As in the host loop test: reads whose failure the scheduler leaves to
// its next look.
bool Unreported(StoreCall call) {
  return call == StoreCall::kNextDue || call == StoreCall::kListSchedules;
}

struct Reply {
  int status = 0;  // 0: no reply
  Json json;
  std::string code() const {
    return json.is_object() ? json.value("code", "") : "";
  }
};

class ServeFaultsTest : public ::testing::TestWithParam<FaultCase> {
 protected:
  void SetUp() override {
    store_ = OpenStore(GetParam().store);
    FaultPlan plan = MixedPlan(GetParam().seed, 0.12, 0.1, absl::Seconds(4));
    faulty_ = std::make_unique<FaultyBackend>(store_.get(), plan, &clock_);
    faulty_->set_enabled(false);
    SchedulerOptions options;
    options.clock = &clock_;
    ASSERT_OK_AND_ASSIGN(scheduler_,
                         Scheduler::Create(faulty_->Borrow(), options));
    serve::ServeOptions serve_options;
    serve_options.listen = {"127.0.0.1", 0};
    ASSERT_OK_AND_ASSIGN(
        server_, serve::Server::Start(*scheduler_, nullptr, serve_options));
    client_ = std::make_unique<httplib::Client>("127.0.0.1", server_->port());
    client_->set_keep_alive(true);
    client_->set_tcp_nodelay(true);  // a body sent apart waits no ACK
    client_->set_read_timeout(10, 0);
    client_->set_write_timeout(10, 0);
    client_->set_connection_timeout(10, 0);
  }

  void TearDown() override {
    client_.reset();
    server_.reset();  // drains
    scheduler_.reset();
  }

  Reply Send(const std::string& method, const std::string& path,
             const Json& body = Json()) {
    httplib::Result result =
        method == "GET" ? client_->Get(path.c_str())
        : method == "DELETE"
            ? client_->Delete(path.c_str())
            : client_->Post(path.c_str(), body.dump(), "application/json");
    Reply reply;
    if (!result) return reply;
    reply.status = result->status;
    reply.json = Json::parse(result->body, nullptr, /*allow_exceptions=*/false);
    return reply;
  }

  // Sends and checks the reply against what was injected meanwhile.
  Reply Checked(const std::string& method, const std::string& path,
                const Json& body = Json()) {
    const size_t from = faulty_->Injections().size();
    const Reply reply = Send(method, path, body);
    const std::vector<Injection> all = faulty_->Injections();
    int injected = 0, reportable = 0;
    for (size_t i = from; i < all.size(); ++i) {
      if (all[i].kind == FaultKind::kDelay) continue;
      ++injected;
      reportable += !Unreported(all[i].call);
    }
    const std::string what =
        absl::StrCat(method, " ", path, " ", body.dump(), " -> ", reply.status,
                     " ", reply.json.dump());
    EXPECT_NE(reply.status, 0) << "no reply: " << what;
    EXPECT_NE(reply.status, 500) << what;
    if (reportable > 0) {
      EXPECT_GE(reply.status, 400)
          << what << ": OK though " << reportable << " store calls failed";
      ++reported_;
    }
    if (reply.status == 503) {
      EXPECT_EQ(reply.code(), "UNAVAILABLE") << what;
    }
    if (reply.status == 504) {
      EXPECT_EQ(reply.code(), "DEADLINE_EXCEEDED") << what;
    }
    if (reply.status == 503 || reply.status == 504) {
      EXPECT_GT(injected, 0) << what << ": nothing was injected";
    }
    return reply;
  }

  SimulatedClock clock_{kStart};
  std::unique_ptr<Backend> store_;
  std::unique_ptr<FaultyBackend> faulty_;
  std::unique_ptr<Scheduler> scheduler_;
  std::unique_ptr<serve::Server> server_;
  std::unique_ptr<httplib::Client> client_;
  int reported_ = 0;
};

TEST_P(ServeFaultsTest, StoreFailuresBecomeErrorRepliesAndLoseNothing) {
  SCOPED_TRACE(absl::StrCat("seed ", GetParam().seed,
                            " (replay: DELAYQ_FAULT_SEEDS=", GetParam().seed,
                            ")"));
  std::mt19937_64 rng(GetParam().seed);
  auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
  struct Held {
    std::string id;
    std::string token;
    size_t run;
  };
  std::vector<Held> held;
  std::vector<std::string> ids;
  std::set<std::string> asked_to_ack, asked_to_cancel;
  RunLog runs;
  auto take = [&](const Reply& reply) {
    if (reply.status != 200 || !reply.json.contains("leases")) return;
    for (const Json& l : reply.json["leases"]) {
      Lease lease;
      lease.job.id = l["job"]["id"].get<std::string>();
      lease.token = std::stoull(l["token"].get<std::string>());
      held.push_back({lease.job.id, l["token"].get<std::string>(),
                      runs.Begin(lease, clock_.Now())});
    }
  };
  // The lease is done with unless the store could not be asked.
  auto settle = [&](size_t i, const Reply& reply) {
    if (reply.status == 503 || reply.status == 504) return;
    runs.End(held[i].run, clock_.Now());
    held.erase(held.begin() + i);
  };

  faulty_->set_enabled(true);
  for (int step = 0; step < kSteps; ++step) {
    switch (pick(10)) {
      case 0:
      case 1: {
        const std::string id = absl::StrCat("j", ids.size());
        ids.push_back(id);
        Checked("POST", "/v1/topics/t/jobs",
                {{"payload", "p"},
                 {"id", id},
                 {"delay_ms", pick(3000)},
                 {"ttr_ms", 10000},
                 {"max_attempts", 1000}});
        break;
      }
      case 2:
        take(Checked("POST", "/v1/topics/t/reserve", {{"max", 2}}));
        break;
      case 3:
      case 4:
      case 5:
        if (!held.empty()) {
          const size_t i = pick(held.size());
          const std::string base = absl::StrCat("/v1/jobs/", held[i].id);
          const size_t what = pick(4);
          if (what == 0) {
            settle(i, Checked("POST", base + "/fail",
                              {{"token", held[i].token}, {"error", "e"}}));
          } else if (what == 1) {
            settle(i, Checked("POST", base + "/release",
                              {{"token", held[i].token}, {"delay_ms", 500}}));
          } else if (what == 2) {
            const Reply r =
                Checked("POST", base + "/touch", {{"token", held[i].token}});
            if (r.status == 409) settle(i, r);
          } else {
            asked_to_ack.insert(held[i].id);
            settle(i,
                   Checked("POST", base + "/ack", {{"token", held[i].token}}));
          }
        }
        break;
      case 6:
        if (!ids.empty()) {
          const std::string id = ids[pick(ids.size())];
          if (pick(3) == 0) {
            asked_to_cancel.insert(id);
            Checked("DELETE", "/v1/jobs/" + id);
          } else {
            Checked("GET", "/v1/jobs/" + id);
          }
        }
        break;
      case 7:
        Checked("GET", "/v1/topics/t/stats");
        break;
      default:
        clock_.Advance(absl::Milliseconds(static_cast<int64_t>(pick(3000))));
        break;
    }
  }

  // Faults stop: everything the store holds comes out over HTTP.
  faulty_->set_enabled(false);
  for (Held& h : held) runs.End(h.run, clock_.Now());
  held.clear();
  for (int round = 0; round < 20 && JobsIn(*store_, {"t"}) != 0; ++round) {
    clock_.Advance(absl::Seconds(10));
    for (;;) {
      const Reply r = Checked("POST", "/v1/topics/t/reserve", {{"max", 100}});
      ASSERT_EQ(r.status, 200) << r.json.dump();
      if (r.json["leases"].empty()) break;
      take(r);
      while (!held.empty()) {
        asked_to_ack.insert(held.back().id);
        const Reply a = Checked("POST", "/v1/jobs/" + held.back().id + "/ack",
                                {{"token", held.back().token}});
        ASSERT_EQ(a.status, 200) << a.json.dump();
        runs.End(held.back().run, clock_.Now());
        held.pop_back();
      }
    }
  }

  const std::string report = faulty_->Report();
  EXPECT_EQ(JobsIn(*store_, {"t"}), 0) << report;
  const std::vector<std::string> lost = LostJobs(*faulty_);
  EXPECT_TRUE(lost.empty()) << "lost: " << absl::StrJoin(lost, ",") << "\n"
                            << report;
  const std::vector<std::string> unasked =
      UnaskedEnds(*faulty_, asked_to_ack, asked_to_cancel);
  EXPECT_TRUE(unasked.empty()) << absl::StrJoin(unasked, "\n");
  const std::vector<std::string> overlaps =
      LiveLeaseOverlaps(runs.Runs(), faulty_->Leases());
  EXPECT_TRUE(overlaps.empty()) << absl::StrJoin(overlaps, "\n") << "\n"
                                << report;
  EXPECT_GT(reported_, 10) << report;
  printf(
      "seed %llu: %zu jobs added, %d requests met store failures, %lld "
      "failures and %lld delays injected\n",
      static_cast<unsigned long long>(GetParam().seed), faulty_->Added().size(),
      reported_, static_cast<long long>(faulty_->Failures()),
      static_cast<long long>(faulty_->Delays()));
}

INSTANTIATE_TEST_SUITE_P(Faults, ServeFaultsTest,
                         ::testing::ValuesIn(FaultCases()), FaultCaseTestName);

}  // namespace
}  // namespace testing
}  // namespace delayq
