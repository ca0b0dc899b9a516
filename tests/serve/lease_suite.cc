// Copyright delayq authors.
//
// Reserve and the lease routes: the fencing token travels with every lease,
// and one that is no longer current is refused and changes nothing.

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "tests/serve/api_suite.h"

namespace delayq {
namespace testing {
namespace {

using ::testing::HasSubstr;

std::string JobPath(const Json& lease, const std::string& action) {
  return absl::StrCat("/v1/jobs/", lease["job"]["id"].get<std::string>(), "/",
                      action);
}

TEST_P(ApiTest, ReserveTouchAndAck) {
  const std::string id = Add("orders", {{"payload", "p"}});
  const Json lease = ReserveOne("orders");
  EXPECT_EQ(lease["job"]["id"], id);
  EXPECT_EQ(lease["job"]["state"], "reserved");
  EXPECT_EQ(lease["job"]["attempts"], 1);
  ASSERT_TRUE(lease["token"].is_string());
  EXPECT_FALSE(lease["deadline"].get<std::string>().empty());
  EXPECT_EQ(api_->Get("/v1/topics/orders/stats").json["reserved"], 1);

  HttpReply touched =
      api_->Post(JobPath(lease, "touch"), {{"token", lease["token"]}});
  ASSERT_EQ(touched.status, 200) << touched.body;
  EXPECT_TRUE(touched.json["deadline"].is_string());

  HttpReply acked =
      api_->Post(JobPath(lease, "ack"), {{"token", lease["token"]}});
  EXPECT_EQ(acked.status, 200) << acked.body;
  EXPECT_EQ(api_->Get("/v1/jobs/" + id).status, 404);
}

TEST_P(ApiTest, ReserveOnAnEmptyTopicReturnsNoLease) {
  HttpReply r = api_->Post("/v1/topics/empty/reserve", {{"wait_ms", 0}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json["leases"].size(), 0u);
}

TEST_P(ApiTest, ReserveManyAtOnce) {
  api_->Post("/v1/topics/many/jobs/batch", {{"payloads", {"1", "2", "3"}}});
  HttpReply r = api_->Post("/v1/topics/many/reserve", {{"max", 2}});
  ASSERT_EQ(r.status, 200) << r.body;
  ASSERT_EQ(r.json["leases"].size(), 2u);
  EXPECT_EQ(r.json["leases"][0]["job"]["payload"], "1");
  EXPECT_EQ(r.json["leases"][1]["job"]["payload"], "2");
}

TEST_P(ApiTest, FailRetriesThenBuriesAndRetryAndKickRevive) {
  const std::string id =
      Add("flaky",
          {{"payload", "p"}, {"max_attempts", 2}, {"backoff", "fixed:0s"}});
  Json lease = ReserveOne("flaky");
  HttpReply failed = api_->Post(JobPath(lease, "fail"),
                                {{"token", lease["token"]}, {"error", "boom"}});
  ASSERT_EQ(failed.status, 200) << failed.body;
  HttpReply job = api_->Get("/v1/jobs/" + id);
  EXPECT_EQ(job.json["state"], "ready");
  EXPECT_EQ(job.json["last_error"], "boom");

  lease = ReserveOne("flaky");
  HttpReply last = api_->Post(JobPath(lease, "fail"),
                              {{"token", lease["token"]}, {"error", "x"}});
  ASSERT_EQ(last.status, 200) << last.body;
  EXPECT_EQ(api_->Get("/v1/jobs/" + id).json["state"], "dead");
  EXPECT_EQ(api_->Get("/v1/topics/flaky/stats").json["dead"], 1);

  HttpReply retried = api_->Post("/v1/jobs/" + id + "/retry", Json::object());
  ASSERT_EQ(retried.status, 200) << retried.body;
  EXPECT_EQ(api_->Get("/v1/jobs/" + id).json["state"], "ready");
  HttpReply not_dead = api_->Post("/v1/jobs/" + id + "/retry", Json::object());
  EXPECT_EQ(not_dead.status, 409);
  EXPECT_EQ(not_dead.code(), "FAILED_PRECONDITION");

  // A retried job has its attempts again: two more failures bury it.
  for (int i = 0; i < 2; ++i) {
    lease = ReserveOne("flaky");
    api_->Post(JobPath(lease, "fail"), {{"token", lease["token"]}});
  }
  ASSERT_EQ(api_->Get("/v1/jobs/" + id).json["state"], "dead");
  HttpReply kicked = api_->Post("/v1/topics/flaky/kick", Json::object());
  ASSERT_EQ(kicked.status, 200) << kicked.body;
  EXPECT_EQ(kicked.json["kicked"], 1);
  EXPECT_EQ(api_->Get("/v1/jobs/" + id).json["state"], "ready");
}

TEST_P(ApiTest, ReleaseGivesTheAttemptBack) {
  const std::string id = Add("rel", {{"payload", "p"}});
  const Json lease = ReserveOne("rel");
  HttpReply released = api_->Post(JobPath(lease, "release"),
                                  {{"token", lease["token"]}, {"delay_ms", 0}});
  ASSERT_EQ(released.status, 200) << released.body;
  HttpReply job = api_->Get("/v1/jobs/" + id);
  EXPECT_EQ(job.json["state"], "ready");
  EXPECT_EQ(job.json["attempts"], 0);

  const Json later = ReserveOne("rel");
  api_->Post(JobPath(later, "release"),
             {{"token", later["token"]}, {"delay_ms", 3'600'000}});
  EXPECT_EQ(api_->Get("/v1/jobs/" + id).json["state"], "delayed");
}

TEST_P(ApiTest, AStaleTokenIsRefusedAndChangesNothing) {
  const std::string id = Add("fence", {{"payload", "p"}});
  const Json first = ReserveOne("fence");
  ASSERT_EQ(
      api_->Post(JobPath(first, "release"), {{"token", first["token"]}}).status,
      200);
  const Json second = ReserveOne("fence");
  ASSERT_NE(first["token"], second["token"]);

  for (const char* action : {"ack", "fail", "release", "touch"}) {
    SCOPED_TRACE(action);
    HttpReply stale =
        api_->Post(JobPath(first, action), {{"token", first["token"]}});
    EXPECT_EQ(stale.status, 409) << stale.body;
    EXPECT_EQ(stale.code(), "FAILED_PRECONDITION");
    HttpReply job = api_->Get("/v1/jobs/" + id);
    EXPECT_EQ(job.json["state"], "reserved");
    EXPECT_EQ(job.json["attempts"], 1);  // the release gave one back
  }
  EXPECT_EQ(
      api_->Post(JobPath(second, "ack"), {{"token", second["token"]}}).status,
      200);
  // The job is gone: an ack of it, stale or not, is refused too.
  HttpReply gone =
      api_->Post(JobPath(second, "ack"), {{"token", second["token"]}});
  EXPECT_GE(gone.status, 400);
  EXPECT_TRUE(gone.code() == "NOT_FOUND" ||
              gone.code() == "FAILED_PRECONDITION")
      << gone.body;
}

TEST_P(ApiTest, AJobsHistoryShowsWhatTheServerSaw) {
  const std::string id =
      Add("hist", {{"payload", "p"}, {"id", "h/1"}, {"backoff", "fixed:0s"}});
  Json lease = ReserveOne("hist");
  ASSERT_EQ(api_->Post("/v1/jobs/h%2F1/fail",
                       {{"token", lease["token"]}, {"error", "boom"}})
                .status,
            200);
  lease = ReserveOne("hist");
  ASSERT_EQ(
      api_->Post("/v1/jobs/h%2F1/ack", {{"token", lease["token"]}}).status,
      200);
  HttpReply history = api_->Get("/v1/jobs/h%2F1/history");
  ASSERT_EQ(history.status, 200) << history.body;
  EXPECT_EQ(history.json["id"], id);
  std::vector<std::string> events;
  for (const Json& e : history.json["events"]) events.push_back(e["event"]);
  EXPECT_EQ(events,
            std::vector<std::string>({"enqueued", "reserved", "failed",
                                      "retried", "reserved", "succeeded"}));
  EXPECT_EQ(history.json["events"][2]["error"], "boom");
  EXPECT_EQ(history.json["events"][4]["attempts"], 2);
  EXPECT_TRUE(history.json["events"][0]["at"].is_string());
  // A job the server never saw has no events (not an error: another
  // process may have handled it).
  HttpReply none = api_->Get("/v1/jobs/other/history");
  ASSERT_EQ(none.status, 200);
  EXPECT_EQ(none.json["events"].size(), 0u);
}

// What a step of a dependency settled in the store shows in the history of
// the jobs that waited for it: one its dependency's ack released, one its
// dependency's death failed (with the error the store gave it).
TEST_P(ApiTest, ADependantsHistoryShowsWhatItsDependencySettled) {
  Add("flow", {{"payload", "p"}, {"id", "dies"}, {"max_attempts", 1}});
  Add("flow", {{"payload", "p"}, {"id", "works"}});
  Add("flow.after", {{"payload", "p"},
                     {"id", "released"},
                     {"after", Json::array({"works"})}});
  Add("flow.after",
      {{"payload", "p"}, {"id", "failed"}, {"after", Json::array({"dies"})}});
  Json lease = ReserveOne("flow");
  ASSERT_EQ(lease["job"]["id"], "dies");
  ASSERT_EQ(api_->Post("/v1/jobs/dies/fail",
                       {{"token", lease["token"]}, {"error", "boom"}})
                .status,
            200);
  lease = ReserveOne("flow");
  ASSERT_EQ(lease["job"]["id"], "works");
  ASSERT_EQ(
      api_->Post("/v1/jobs/works/ack", {{"token", lease["token"]}}).status,
      200);

  auto events_of = [&](absl::string_view id) {
    HttpReply history = api_->Get(absl::StrCat("/v1/jobs/", id, "/history"));
    EXPECT_EQ(history.status, 200) << history.body;
    return history.json.value("events", Json::array());
  };
  Json released = events_of("released");
  std::vector<std::string> names;
  for (const Json& e : released) names.push_back(e["event"]);
  EXPECT_EQ(names, std::vector<std::string>({"enqueued", "unblocked"}));
  Json failed = events_of("failed");
  names.clear();
  for (const Json& e : failed) names.push_back(e["event"]);
  EXPECT_EQ(names, std::vector<std::string>({"enqueued", "dead"}));
  ASSERT_EQ(failed.size(), 2u);
  EXPECT_NE(failed[1].value("error", "").find("'dies'"), std::string::npos)
      << failed[1];
}

// An encoded '/' belongs to its segment: "report%2Fhistory" names the job
// "report/history", not the history of job "report".
TEST_P(ApiTest, AnEncodedSlashStaysInsideAnId) {
  Add("slash", {{"payload", "whole"}, {"id", "report/history"}});
  Add("slash", {{"payload", "part"}, {"id", "report"}});
  HttpReply job = api_->Get("/v1/jobs/report%2Fhistory");
  ASSERT_EQ(job.status, 200) << job.body;
  EXPECT_EQ(job.json["id"], "report/history");
  EXPECT_EQ(job.json["payload"], "whole");
  EXPECT_EQ(api_->Get("/v1/jobs/report%2fhistory").json["id"],
            "report/history");
  HttpReply history = api_->Get("/v1/jobs/report%2Fhistory/history");
  ASSERT_EQ(history.status, 200) << history.body;
  EXPECT_EQ(history.json["id"], "report/history");
  EXPECT_EQ(api_->Get("/v1/jobs/report/history").json["id"], "report");
}

// An id is one path segment: a raw '/' makes a path no route has, so
// "DELETE /v1/jobs/report/history" cannot cancel a job "report/history".
TEST_P(ApiTest, ARawSlashInAnIdIsNoRoute) {
  Add("slash", {{"payload", "whole"}, {"id", "report/history"}});
  Add("slash", {{"payload", "a/b"}, {"id", "a/b"}});
  HttpReply deleted = api_->Delete("/v1/jobs/report/history");
  EXPECT_EQ(deleted.status, 405) << deleted.body;
  EXPECT_EQ(deleted.allow, "GET");
  HttpReply raw = api_->Get("/v1/jobs/a/b");
  EXPECT_EQ(raw.status, 404) << raw.body;
  EXPECT_THAT(raw.json.value("message", ""), HasSubstr("%2F"));
  EXPECT_EQ(api_->Delete("/v1/jobs/a/b").status, 404);
  EXPECT_EQ(api_->Get("/v1/jobs/report%2Fhistory").status, 200);
  EXPECT_EQ(api_->Get("/v1/jobs/a%2Fb").status, 200);
}

// A path a route has, asked with a method it does not take: 405, with the
// methods it takes.
TEST_P(ApiTest, AnotherMethodOfAKnownPathIs405) {
  HttpReply put = api_->Put("/v1/jobs/x/history", Json::object());
  EXPECT_EQ(put.status, 405) << put.body;
  EXPECT_EQ(put.allow, "GET");
  EXPECT_EQ(put.code(), "UNIMPLEMENTED");
  HttpReply del = api_->Delete("/v1/topics");
  EXPECT_EQ(del.status, 405) << del.body;
  EXPECT_EQ(del.allow, "GET");
  HttpReply get = api_->Get("/v1/jobs/x/ack");
  EXPECT_EQ(get.status, 405) << get.body;
  EXPECT_EQ(get.allow, "POST");
}

// A consumer that takes one job at a time acks each and gets the next in
// one request: "next" names the topic to reserve from.
TEST_P(ApiTest, AnAckWithNextReservesTheNextJob) {
  Add("chain", {{"payload", "1"}, {"id", "c1"}});
  Add("chain", {{"payload", "2"}, {"id", "c2"}});
  Json lease = ReserveOne("chain");
  ASSERT_EQ(lease["job"]["id"], "c1");
  const Json next = {{"topic", "chain"}};
  HttpReply first = api_->Post(JobPath(lease, "ack"),
                               {{"token", lease["token"]}, {"next", next}});
  ASSERT_EQ(first.status, 200) << first.body;
  EXPECT_EQ(first.json["acked"], true);
  ASSERT_EQ(first.json["leases"].size(), 1u) << first.body;
  const Json second = first.json["leases"][0];
  EXPECT_EQ(second["job"]["id"], "c2");
  EXPECT_EQ(api_->Get("/v1/jobs/c1").status, 404);
  // The first lease again: its ack is refused, and the reservation still
  // goes ahead (nothing is left to reserve).
  HttpReply stale = api_->Post(JobPath(lease, "ack"),
                               {{"token", lease["token"]}, {"next", next}});
  ASSERT_EQ(stale.status, 200) << stale.body;
  EXPECT_EQ(stale.json["acked"], false);
  EXPECT_EQ(stale.json["ack_error"]["code"], "FAILED_PRECONDITION");
  EXPECT_EQ(stale.json["leases"].size(), 0u);
  // The lease the ack handed out is a lease like any other.
  HttpReply last = api_->Post(JobPath(second, "ack"),
                              {{"token", second["token"]},
                               {"result", "r"},
                               {"next", {{"topic", "chain"}, {"wait_ms", 0}}}});
  ASSERT_EQ(last.status, 200) << last.body;
  EXPECT_EQ(last.json["acked"], true);
  EXPECT_EQ(last.json["leases"].size(), 0u);
  EXPECT_EQ(api_->Get("/v1/jobs/c2").status, 404);
  // A malformed "next" is refused before anything happens.
  Add("chain", {{"payload", "3"}, {"id", "c3"}});
  Json third = ReserveOne("chain");
  for (const Json& bad :
       {Json("chain"), Json{{"wait_ms", 1}}, Json{{"topic", "chain"}, {"x", 1}},
        Json{{"topic", "chain"}, {"wait_ms", -1}},
        Json{{"topic", "chain"}, {"worker", "two words"}},
        Json{{"topic", "no spaces"}}, Json{{"topic", std::string(201, 'a')}}}) {
    HttpReply refused = api_->Post(JobPath(third, "ack"),
                                   {{"token", third["token"]}, {"next", bad}});
    EXPECT_EQ(refused.status, 400) << bad.dump() << " " << refused.body;
  }
  EXPECT_EQ(api_->Get("/v1/jobs/c3").json["state"], "reserved");
  // "next" may name the worker who holds the next lease, as a reservation
  // may.
  Add("chain", {{"payload", "4"}, {"id", "c4"}});
  HttpReply named =
      api_->Post(JobPath(third, "ack"),
                 {{"token", third["token"]},
                  {"next", {{"topic", "chain"}, {"worker", "host-7:9"}}}});
  ASSERT_EQ(named.status, 200) << named.body;
  ASSERT_EQ(named.json["leases"].size(), 1u) << named.body;
  EXPECT_EQ(named.json["leases"][0]["job"]["holder"], "host-7:9");
  EXPECT_EQ(api_->Get("/v1/jobs/c4").json["holder"], "host-7:9");
  // A null worker is an absent one, as a null field is everywhere else.
  Json fourth = named.json["leases"][0];
  HttpReply unnamed =
      api_->Post(JobPath(fourth, "ack"),
                 {{"token", fourth["token"]},
                  {"next", {{"topic", "chain"}, {"worker", nullptr}}}});
  EXPECT_EQ(unnamed.status, 200) << unnamed.body;
  EXPECT_EQ(unnamed.json["acked"], true) << unnamed.body;
}

TEST_P(ApiTest, ManyLeasesAreAckedInOneRequest) {
  api_->Post("/v1/topics/bulk/jobs/batch", {{"payloads", {"1", "2", "3"}}});
  HttpReply reserved = api_->Post("/v1/topics/bulk/reserve", {{"max", 3}});
  ASSERT_EQ(reserved.json["leases"].size(), 3u) << reserved.body;
  const Json& leases = reserved.json["leases"];
  Json acks = Json::array();
  for (const Json& lease : leases) {
    acks.push_back({{"id", lease["job"]["id"]}, {"token", lease["token"]}});
  }
  acks[1]["token"] = "12345";  // not the lease's
  acks.push_back(acks[0]);     // acked once, stale the second time
  HttpReply acked = api_->Post("/v1/leases/ack", {{"leases", acks}});
  ASSERT_EQ(acked.status, 200) << acked.body;
  EXPECT_EQ(acked.json["acked"], 2);
  ASSERT_EQ(acked.json["errors"].size(), 2u) << acked.body;
  EXPECT_EQ(acked.json["errors"][0]["id"], leases[1]["job"]["id"]);
  EXPECT_EQ(acked.json["errors"][0]["code"], "FAILED_PRECONDITION");
  EXPECT_EQ(acked.json["errors"][1]["id"], leases[0]["job"]["id"]);
  EXPECT_EQ(acked.json["errors"][1]["code"], "FAILED_PRECONDITION");
  HttpReply stats = api_->Get("/v1/topics/bulk/stats");
  EXPECT_EQ(stats.json["reserved"], 1);
  EXPECT_EQ(stats.json["ready"], 0);
}

TEST_P(ApiTest, AMalformedAckListAcksNone) {
  Add("bulk", {{"payload", "p"}});
  const Json lease = ReserveOne("bulk");
  for (const Json& body :
       {Json{{"leases",
              {{{"id", lease["job"]["id"]}, {"token", lease["token"]}},
               {{"id", "x"}}}}},
        Json{{"leases", Json::array()}}, Json{{"leases", "all"}},
        Json{{"leases",
              {{{"id", lease["job"]["id"]},
                {"token", lease["token"]},
                {"extra", 1}}}}},
        Json::object()}) {
    SCOPED_TRACE(body.dump());
    HttpReply r = api_->Post("/v1/leases/ack", body);
    EXPECT_EQ(r.status, 400) << r.body;
    EXPECT_EQ(r.code(), "INVALID_ARGUMENT");
  }
  EXPECT_EQ(api_->Get("/v1/topics/bulk/stats").json["reserved"], 1);
}

// The server remembers the leases it handed out, so finishing one is a
// single store call: the metrics count no read of a job.
TEST_P(ApiTest, FinishingALeaseReadsNoJob) {
  api_->Post("/v1/topics/quick/jobs/batch", {{"payloads", {"1", "2", "3"}}});
  Json lease = ReserveOne("quick");
  ASSERT_EQ(
      api_->Post(JobPath(lease, "touch"), {{"token", lease["token"]}}).status,
      200);
  ASSERT_EQ(
      api_->Post(JobPath(lease, "release"), {{"token", lease["token"]}}).status,
      200);
  lease = ReserveOne("quick");
  ASSERT_EQ(api_->Post(JobPath(lease, "fail"),
                       {{"token", lease["token"]}, {"error", "e"}})
                .status,
            200);
  lease = ReserveOne("quick");
  ASSERT_EQ(
      api_->Post(JobPath(lease, "ack"), {{"token", lease["token"]}}).status,
      200);
  lease = ReserveOne("quick");
  HttpReply batch = api_->Post(
      "/v1/leases/ack",
      {{"leases", {{{"id", lease["job"]["id"]}, {"token", lease["token"]}}}}});
  ASSERT_EQ(batch.json["acked"], 1) << batch.body;
  const std::string metrics = api_->Get("/metrics").body;
  EXPECT_NE(metrics.find("delayq_store_call_seconds_count{call=\"ack\"} 1"),
            std::string::npos)
      << metrics;
  EXPECT_NE(
      metrics.find("delayq_store_call_seconds_count{call=\"ack_batch\"} 1"),
      std::string::npos)
      << metrics;
  EXPECT_EQ(metrics.find("call=\"get\""), std::string::npos) << metrics;
}

}  // namespace
}  // namespace testing
}  // namespace delayq
