// Copyright delayq authors.
//
// Topic limits and periodic schedules over the API: stored, listed,
// replaced and removed, bad input refused, and a limit that holds.

#include <string>

#include "tests/serve/api_suite.h"

namespace delayq {
namespace testing {
namespace {

TEST_P(ApiTest, PromoteRunsADelayedJobAndPurgeDeletesDeadOnes) {
  const std::string later =
      Add("ops", {{"payload", "p"}, {"delay_ms", 3'600'000}});
  EXPECT_EQ(api_->Post("/v1/jobs/" + later + "/promote", Json::object()).status,
            200);
  EXPECT_EQ(api_->Get("/v1/jobs/" + later).json["state"], "ready");
  HttpReply again =
      api_->Post("/v1/jobs/" + later + "/promote", Json::object());
  EXPECT_EQ(again.status, 409) << again.body;
  EXPECT_EQ(api_->Post("/v1/jobs/nope/promote", Json::object()).status, 404);

  for (int i = 0; i < 3; ++i) {
    Add("graves", {{"payload", "p"}, {"max_attempts", 1}});
    const Json lease = ReserveOne("graves");
    ASSERT_EQ(api_->Post("/v1/jobs/" + lease["job"]["id"].get<std::string>() +
                             "/fail",
                         {{"token", lease["token"]}, {"error", "x"}})
                  .status,
              200);
  }
  EXPECT_EQ(api_->Post("/v1/topics/graves/purge", {{"max", 2}}).status, 400);
  HttpReply purged =
      api_->Post("/v1/topics/graves/purge", {{"state", "dead"}, {"max", 2}});
  EXPECT_EQ(purged.status, 200) << purged.body;
  EXPECT_EQ(purged.json["purged"], 2);
  EXPECT_EQ(
      api_->Post("/v1/topics/graves/purge", {{"state", "dead"}}).json["purged"],
      1);
  EXPECT_EQ(api_->Get("/v1/topics/graves/stats").json["dead"], 0);
}

TEST_P(ApiTest, ABulkActionActsOnEachIdAndSaysWhichFailed) {
  Add("bulk", {{"payload", "a"}, {"id", "d1"}, {"delay_ms", 3'600'000}});
  Add("bulk", {{"payload", "b"}, {"id", "d2"}, {"delay_ms", 3'600'000}});
  Add("bulk", {{"payload", "c"}, {"id", "r1"}});
  HttpReply promoted =
      api_->Post("/v1/bulk/promote", {{"ids", {"d1", "nope", "d2", "r1"}}});
  ASSERT_EQ(promoted.status, 200) << promoted.body;
  EXPECT_EQ(promoted.json["done"], 2);
  ASSERT_EQ(promoted.json["errors"].size(), 2u) << promoted.body;
  EXPECT_EQ(promoted.json["errors"][0]["id"], "nope");
  EXPECT_EQ(promoted.json["errors"][0]["code"], "NOT_FOUND");
  EXPECT_EQ(promoted.json["errors"][1]["id"], "r1");
  EXPECT_EQ(promoted.json["errors"][1]["code"], "FAILED_PRECONDITION");
  EXPECT_EQ(api_->Get("/v1/topics/bulk/stats").json["ready"], 3);

  for (const char* id : {"g1", "g2"}) {
    Add("graves2", {{"payload", "g"}, {"id", id}, {"max_attempts", 1}});
    const Json lease = ReserveOne("graves2");
    ASSERT_EQ(api_->Post("/v1/jobs/" + lease["job"]["id"].get<std::string>() +
                             "/fail",
                         {{"token", lease["token"]}, {"error", "x"}})
                  .status,
              200);
  }
  ASSERT_EQ(api_->Get("/v1/topics/graves2/stats").json["dead"], 2);
  HttpReply retried =
      api_->Post("/v1/bulk/retry", {{"ids", {"g1", "r1", "g2"}}});
  ASSERT_EQ(retried.status, 200) << retried.body;
  EXPECT_EQ(retried.json["done"], 2);
  ASSERT_EQ(retried.json["errors"].size(), 1u) << retried.body;
  EXPECT_EQ(retried.json["errors"][0]["id"], "r1");
  EXPECT_EQ(api_->Get("/v1/topics/graves2/stats").json["ready"], 2);

  HttpReply cancelled =
      api_->Post("/v1/bulk/cancel", {{"ids", {"d1", "d2", "r1", "d1"}}});
  ASSERT_EQ(cancelled.status, 200) << cancelled.body;
  EXPECT_EQ(cancelled.json["done"], 3);
  ASSERT_EQ(cancelled.json["errors"].size(), 1u);
  EXPECT_EQ(cancelled.json["errors"][0]["code"], "NOT_FOUND");
  EXPECT_EQ(api_->Get("/v1/jobs/r1").status, 404);

  // A malformed request acts on nothing.
  Add("bulk", {{"payload", "e"}, {"id", "e1"}});
  for (const Json& bad :
       {Json::object(), Json{{"ids", Json::array()}}, Json{{"ids", "e1"}},
        Json{{"ids", {"e1", 7}}}, Json{{"ids", {"e1", ""}}},
        Json{{"ids", {"e1"}}, {"state", "dead"}},
        Json{{"ids", std::vector<std::string>(10'001, "e1")}},
        Json{{"ids", {"e1", std::string(201, 'x')}}},
        Json{{"ids", {"e1", "line\nbreak"}}}}) {
    HttpReply refused = api_->Post("/v1/bulk/cancel", bad);
    EXPECT_EQ(refused.status, 400) << refused.body;
  }
  EXPECT_EQ(api_->Get("/v1/jobs/e1").json["state"], "ready");
  // So is a path that names no job a store could hold: a bad request, not
  // a missing job.
  for (const std::string& path :
       {"/v1/jobs/" + std::string(201, 'x'), std::string("/v1/jobs/a%01b")}) {
    EXPECT_EQ(api_->Delete(path).status, 400) << path;
    EXPECT_EQ(api_->Get(path).status, 400) << path;
    EXPECT_EQ(api_->Get(path + "/history").status, 400) << path;
    EXPECT_EQ(api_->Post(path + "/promote", Json::object()).status, 400)
        << path;
  }
}

TEST_P(ApiTest, ALimitIsSetListedAndCleared) {
  HttpReply none = api_->Get("/v1/topics/pay/limit");
  EXPECT_EQ(none.status, 404) << none.body;
  EXPECT_EQ(none.code(), "NOT_FOUND");

  HttpReply set = api_->Put("/v1/topics/pay/limit",
                            {{"rate", 50}, {"burst", 5}, {"concurrency", 10}});
  ASSERT_EQ(set.status, 200) << set.body;
  EXPECT_EQ(set.json["topic"], "pay");
  EXPECT_EQ(set.json["rate"], 50);
  EXPECT_EQ(set.json["period_ms"], 1000);
  EXPECT_EQ(set.json["burst"], 5);
  EXPECT_EQ(set.json["concurrency"], 10);

  HttpReply one = api_->Get("/v1/topics/pay/limit");
  ASSERT_EQ(one.status, 200) << one.body;
  EXPECT_EQ(one.json, set.json);
  HttpReply all = api_->Get("/v1/limits");
  ASSERT_EQ(all.json["limits"].size(), 1u) << all.body;
  EXPECT_EQ(all.json["limits"][0], set.json);

  EXPECT_EQ(api_->Delete("/v1/topics/pay/limit").status, 200);
  EXPECT_EQ(api_->Get("/v1/topics/pay/limit").status, 404);
  EXPECT_EQ(api_->Get("/v1/limits").json["limits"].size(), 0u);
}

TEST_P(ApiTest, ABadLimitIsRefused) {
  for (const Json& body :
       {Json{{"rate", 0}, {"concurrency", 0}}, Json{{"rate", 5}, {"burst", 0}},
        Json{{"rate", 5}, {"period_ms", 0}}, Json{{"rate", -1}},
        Json{{"rate", "fast"}}, Json{{"rate", 5}, {"per", 1}}}) {
    SCOPED_TRACE(body.dump());
    HttpReply r = api_->Put("/v1/topics/pay/limit", body);
    EXPECT_EQ(r.status, 400) << r.body;
    EXPECT_EQ(r.code(), "INVALID_ARGUMENT");
  }
  EXPECT_EQ(api_->Get("/v1/limits").json["limits"].size(), 0u);
}

TEST_P(ApiTest, AConcurrencyCapHoldsBackReserves) {
  api_->Post("/v1/topics/capped/jobs/batch", {{"payloads", {"1", "2"}}});
  ASSERT_EQ(api_->Put("/v1/topics/capped/limit", {{"concurrency", 1}}).status,
            200);
  HttpReply first = api_->Post("/v1/topics/capped/reserve", {{"max", 2}});
  ASSERT_EQ(first.json["leases"].size(), 1u) << first.body;
  EXPECT_EQ(api_->Post("/v1/topics/capped/reserve", Json::object())
                .json["leases"]
                .size(),
            0u);
  const Json& lease = first.json["leases"][0];
  ASSERT_EQ(
      api_->Post("/v1/jobs/" + lease["job"]["id"].get<std::string>() + "/ack",
                 {{"token", lease["token"]}})
          .status,
      200);
  EXPECT_EQ(api_->Post("/v1/topics/capped/reserve", Json::object())
                .json["leases"]
                .size(),
            1u);
}

TEST_P(ApiTest, AScheduleIsStoredListedReplacedAndRemoved) {
  HttpReply put =
      api_->Put("/v1/schedules/report.nightly", {{"spec", "0 3 * * *"},
                                                 {"topic", "reports"},
                                                 {"payload", "{}"},
                                                 {"time_zone", "Europe/Berlin"},
                                                 {"missed", "once"},
                                                 {"priority", 2},
                                                 {"max_attempts", 4}});
  ASSERT_EQ(put.status, 200) << put.body;
  EXPECT_EQ(put.json["name"], "report.nightly");
  EXPECT_EQ(put.json["spec"], "0 3 * * *");
  EXPECT_EQ(put.json["topic"], "reports");
  EXPECT_EQ(put.json["payload"], "{}");
  EXPECT_EQ(put.json["time_zone"], "Europe/Berlin");
  EXPECT_EQ(put.json["missed"], "once");
  EXPECT_EQ(put.json["priority"], 2);
  EXPECT_EQ(put.json["max_attempts"], 4);
  ASSERT_TRUE(put.json["next_run"].is_string()) << put.body;
  // 03:00 in Berlin is 01:00 or 02:00 UTC.
  const std::string next = put.json["next_run"];
  EXPECT_TRUE(next.find("T01:00:00.000Z") != std::string::npos ||
              next.find("T02:00:00.000Z") != std::string::npos)
      << next;

  HttpReply every = api_->Put("/v1/schedules/tick",
                              {{"spec", "@every 90s"}, {"topic", "ticks"}});
  ASSERT_EQ(every.status, 200) << every.body;
  EXPECT_EQ(every.json["payload"], "");

  HttpReply all = api_->Get("/v1/schedules");
  ASSERT_EQ(all.json["schedules"].size(), 2u) << all.body;
  EXPECT_EQ(all.json["schedules"][0]["name"], "report.nightly");
  EXPECT_EQ(all.json["schedules"][1]["name"], "tick");

  HttpReply replaced = api_->Put("/v1/schedules/tick",
                                 {{"spec", "@hourly"}, {"topic", "ticks"}});
  ASSERT_EQ(replaced.status, 200) << replaced.body;
  EXPECT_EQ(api_->Get("/v1/schedules/tick").json["spec"], "@hourly");

  EXPECT_EQ(api_->Delete("/v1/schedules/tick").status, 200);
  HttpReply gone = api_->Get("/v1/schedules/tick");
  EXPECT_EQ(gone.status, 404);
  EXPECT_EQ(gone.code(), "NOT_FOUND");
  EXPECT_EQ(api_->Delete("/v1/schedules/tick").status, 404);
  EXPECT_EQ(api_->Get("/v1/schedules").json["schedules"].size(), 1u);
}

TEST_P(ApiTest, ABadScheduleIsRefused) {
  for (const Json& body :
       {Json{{"topic", "t"}}, Json{{"spec", "@hourly"}},
        Json{{"spec", "61 * * * *"}, {"topic", "t"}},
        Json{{"spec", "@hourly"}, {"topic", "t"}, {"time_zone", "Mars/Base"}},
        Json{{"spec", "@hourly"}, {"topic", "t"}, {"missed", "twice"}},
        Json{{"spec", "@hourly"}, {"topic", "t"}, {"delay_ms", 5}},
        Json{{"spec", "@hourly"}, {"topic", "t"}, {"colour", "red"}}}) {
    SCOPED_TRACE(body.dump());
    HttpReply r = api_->Put("/v1/schedules/s", body);
    EXPECT_EQ(r.status, 400) << r.body;
    EXPECT_EQ(r.code(), "INVALID_ARGUMENT");
  }
  EXPECT_EQ(api_->Put("/v1/schedules/bad%20name",
                      {{"spec", "@hourly"}, {"topic", "t"}})
                .status,
            400);
  EXPECT_EQ(api_->Get("/v1/schedules").json["schedules"].size(), 0u);
}

}  // namespace
}  // namespace testing
}  // namespace delayq
