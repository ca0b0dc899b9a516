// Copyright delayq authors.
//
// Results and done jobs over HTTP: a job added with keep_for_ms is kept
// done with the result its ack carried; GET /v1/jobs/{id}?wait= answers
// once it has finished, or as it is when the wait is over.

#include <string>
#include <thread>

#include "absl/strings/escaping.h"
#include "tests/serve/api_suite.h"

namespace delayq {
namespace testing {
namespace {

TEST_P(ApiTest, AnAckedResultIsKeptAndAWaitingReaderGetsIt) {
  const std::string id =
      Add("calc", {{"payload", "6*7"}, {"keep_for_ms", 3'600'000}});
  const Json lease = ReserveOne("calc");

  HttpReply waited;
  std::thread reader([&] {
    ApiClient own(server_->port());
    waited = own.Get("/v1/jobs/" + id + "?wait=30s");
  });
  HttpReply acked = api_->Post("/v1/jobs/" + id + "/ack",
                               {{"token", lease["token"]}, {"result", "42"}});
  reader.join();
  ASSERT_EQ(acked.status, 200) << acked.body;
  ASSERT_EQ(waited.status, 200) << waited.body;
  EXPECT_EQ(waited.json["state"], "done");
  EXPECT_EQ(waited.json["result"], "42");
  EXPECT_TRUE(waited.json["finished_at"].is_string());
  EXPECT_EQ(waited.json["keep_for_ms"], 3'600'000);

  HttpReply listed = api_->Get("/v1/topics/calc/jobs?state=done");
  ASSERT_EQ(listed.status, 200) << listed.body;
  ASSERT_EQ(listed.json["jobs"].size(), 1u);
  EXPECT_EQ(listed.json["jobs"][0]["id"], id);
  EXPECT_EQ(api_->Get("/v1/topics/calc/stats").json["done"], 1);
  // The id stays taken while the job is kept.
  EXPECT_EQ(
      api_->Post("/v1/topics/calc/jobs", {{"id", id}, {"payload", "p"}}).status,
      409);
}

// A job added with `after` waits for those jobs.
TEST_P(ApiTest, AJobAddedAfterAnotherWaitsForIt) {
  const std::string child = Add("children", {{"payload", "c"}});
  HttpReply added = api_->Post(
      "/v1/topics/parents/jobs",
      {{"payload", "p"}, {"after", {child}}, {"on_dependency_failure", "run"}});
  ASSERT_EQ(added.status, 201) << added.body;
  const std::string parent = added.json["id"];
  EXPECT_EQ(api_->Get("/v1/jobs/" + parent).json["state"], "waiting");
  EXPECT_EQ(api_->Get("/v1/topics/parents/stats").json["waiting"], 1);
  const Json lease = ReserveOne("children");
  ASSERT_EQ(
      api_->Post("/v1/jobs/" + child + "/ack", {{"token", lease["token"]}})
          .status,
      200);
  EXPECT_EQ(api_->Get("/v1/jobs/" + parent).json["state"], "ready");
  EXPECT_EQ(api_->Post("/v1/topics/parents/jobs",
                       {{"payload", "p"}, {"after", "not-a-list"}})
                .status,
            400);
  EXPECT_EQ(api_->Post("/v1/topics/parents/jobs",
                       {{"payload", "p"}, {"after", {"no-such-job"}}})
                .status,
            404);
}

TEST_P(ApiTest, AWaitThatRunsOutAnswersTheJobAsItIs) {
  const std::string id =
      Add("slow", {{"payload", "p"}, {"keep_for_ms", 60'000}});
  HttpReply r = api_->Get("/v1/jobs/" + id + "?wait=200ms");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json["state"], "ready");
  EXPECT_TRUE(r.json["finished_at"].is_null());
  EXPECT_EQ(api_->Get("/v1/jobs/" + id + "?wait=61s").status, 400);
  EXPECT_EQ(api_->Get("/v1/jobs/" + id + "?wait=soon").status, 400);
  EXPECT_EQ(api_->Get("/v1/jobs/unknown?wait=1s").status, 404);
}

TEST_P(ApiTest, ABinaryResultTravelsAsBase64) {
  const std::string id =
      Add("bin", {{"payload", "p"}, {"keep_for_ms", 60'000}});
  const Json lease = ReserveOne("bin");
  const std::string bytes("\xff\x00\x01", 3);
  HttpReply acked = api_->Post("/v1/jobs/" + id + "/ack",
                               {{"token", lease["token"]},
                                {"result_base64", absl::Base64Escape(bytes)}});
  ASSERT_EQ(acked.status, 200) << acked.body;
  HttpReply job = api_->Get("/v1/jobs/" + id);
  ASSERT_EQ(job.status, 200) << job.body;
  EXPECT_EQ(job.json["result_base64"], absl::Base64Escape(bytes));
}

TEST_P(ApiTest, ABadResultOrRetentionIsRefused) {
  EXPECT_EQ(
      api_->Post("/v1/topics/t/jobs", {{"payload", "p"}, {"keep_for_ms", -1}})
          .status,
      400);
  EXPECT_EQ(api_->Post("/v1/topics/t/jobs", {{"payload", "p"},
                                             {"keep_for_ms", 1000},
                                             {"keep_at_most", 10'001}})
                .status,
            400);
  const std::string id = Add("t", {{"payload", "p"}, {"keep_for_ms", 1000}});
  const Json lease = ReserveOne("t");
  EXPECT_EQ(api_->Post("/v1/jobs/" + id + "/ack", {{"token", lease["token"]},
                                                   {"result", "a"},
                                                   {"result_base64", "YQ=="}})
                .status,
            400);
  EXPECT_EQ(api_->Post("/v1/jobs/" + id + "/ack",
                       {{"token", lease["token"]}, {"result_base64", "!!"}})
                .status,
            400);
  EXPECT_EQ(api_->Get("/v1/topics/t/jobs?state=finished").status, 400);
}

}  // namespace
}  // namespace testing
}  // namespace delayq
