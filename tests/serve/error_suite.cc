// Copyright delayq authors.
//
// Every way a request can be wrong gets a JSON error with a stable code and
// the matching HTTP status.

#include <string>

#include "absl/strings/str_cat.h"
#include "tests/serve/api_suite.h"

namespace delayq {
namespace testing {
namespace {

void ExpectError(const HttpReply& r, int status, const std::string& code) {
  EXPECT_EQ(r.status, status) << r.body;
  EXPECT_EQ(r.code(), code) << r.body;
  EXPECT_TRUE(r.json.contains("message")) << r.body;
}

TEST_P(ApiTest, MalformedJsonIsInvalidArgument) {
  ExpectError(api_->PostRaw("/v1/topics/t/jobs", "{\"payload\": "), 400,
              "INVALID_ARGUMENT");
  ExpectError(api_->PostRaw("/v1/topics/t/jobs", "[1, 2]"), 400,
              "INVALID_ARGUMENT");
  ExpectError(api_->PostRaw("/v1/jobs/x/ack", "not json"), 400,
              "INVALID_ARGUMENT");
}

TEST_P(ApiTest, BadFieldsAreInvalidArgument) {
  const std::string add = "/v1/topics/t/jobs";
  ExpectError(api_->Post(add, Json::object()), 400, "INVALID_ARGUMENT");
  ExpectError(api_->Post(add, {{"payload", "a"}, {"payload_base64", "YQ=="}}),
              400, "INVALID_ARGUMENT");
  ExpectError(api_->Post(add, {{"payload_base64", "***"}}), 400,
              "INVALID_ARGUMENT");
  ExpectError(api_->Post(add, {{"payload", 5}}), 400, "INVALID_ARGUMENT");
  ExpectError(api_->Post(add, {{"payload", "a"}, {"delay", 5}}), 400,
              "INVALID_ARGUMENT");
  ExpectError(api_->Post(add, {{"payload", "a"}, {"delay_ms", -1}}), 400,
              "INVALID_ARGUMENT");
  ExpectError(api_->Post(add, {{"payload", "a"}, {"ttr_ms", 0}}), 400,
              "INVALID_ARGUMENT");
  ExpectError(api_->Post(add, {{"payload", "a"}, {"max_attempts", 0}}), 400,
              "INVALID_ARGUMENT");
  ExpectError(api_->Post(add, {{"payload", "a"}, {"backoff", "soon"}}), 400,
              "INVALID_ARGUMENT");
  ExpectError(api_->Post(add, {{"payload", "a"}, {"run_at", "tomorrow"}}), 400,
              "INVALID_ARGUMENT");
  ExpectError(api_->Post(add, {{"payload", "a"}, {"replace", "yes"}}), 400,
              "INVALID_ARGUMENT");
  ExpectError(api_->Post("/v1/topics/bad%20topic/jobs", {{"payload", "a"}}),
              400, "INVALID_ARGUMENT");
  ExpectError(api_->Post("/v1/topics/t/jobs/batch", {{"payloads", "a"}}), 400,
              "INVALID_ARGUMENT");
  ExpectError(api_->Post("/v1/topics/t/reserve", {{"max", 0}}), 400,
              "INVALID_ARGUMENT");
  ExpectError(api_->Post("/v1/topics/t/reserve", {{"wait_ms", "1s"}}), 400,
              "INVALID_ARGUMENT");
  ExpectError(api_->Get("/v1/topics/t/jobs?state=gone"), 400,
              "INVALID_ARGUMENT");
  ExpectError(api_->Get("/v1/topics/t/jobs?limit=0"), 400, "INVALID_ARGUMENT");
  ExpectError(api_->Post("/v1/topics/t/kick", {{"max", -1}}), 400,
              "INVALID_ARGUMENT");
}

// The routes that act on what their path names take no fields: one is
// refused before anything happens, as an unknown field of any route is.
TEST_P(ApiTest, ActionRoutesRefuseFields) {
  Add("t", {{"payload", "a"}, {"id", "later"}, {"delay_ms", 3'600'000}});
  for (const char* route :
       {"/v1/jobs/later/promote", "/v1/jobs/later/retry", "/v1/topics/t/pause",
        "/v1/topics/t/resume", "/v1/batches/b/close"}) {
    ExpectError(api_->Post(route, {{"delay_ms", 0}}), 400, "INVALID_ARGUMENT");
  }
  EXPECT_EQ(api_->Get("/v1/jobs/later").json["state"], "delayed");
  EXPECT_EQ(api_->Get("/v1/topics/t/stats").json["paused"], false);
  // Without a body, or with {}, they act.
  EXPECT_EQ(api_->PostRaw("/v1/topics/t/pause", "").status, 200);
  EXPECT_EQ(api_->Post("/v1/jobs/later/promote", Json::object()).status, 200);
  EXPECT_EQ(api_->Get("/v1/jobs/later").json["state"], "ready");
}

TEST_P(ApiTest, LeaseRoutesNeedAToken) {
  const std::string id = Add("t", {{"payload", "a"}});
  const Json lease = ReserveOne("t");
  for (const char* action : {"ack", "fail", "release", "touch"}) {
    SCOPED_TRACE(action);
    const std::string path = absl::StrCat("/v1/jobs/", id, "/", action);
    ExpectError(api_->Post(path, Json::object()), 400, "INVALID_ARGUMENT");
    ExpectError(api_->Post(path, {{"token", "twelve"}}), 400,
                "INVALID_ARGUMENT");
  }
  EXPECT_EQ(api_->Get("/v1/jobs/" + id).json["state"], "reserved");
}

TEST_P(ApiTest, UnknownJobsAreNotFound) {
  ExpectError(api_->Get("/v1/jobs/nope"), 404, "NOT_FOUND");
  ExpectError(api_->Delete("/v1/jobs/nope"), 404, "NOT_FOUND");
  ExpectError(api_->Post("/v1/jobs/nope/retry", Json::object()), 404,
              "NOT_FOUND");
}

TEST_P(ApiTest, UnknownRoutesAreNotFound) {
  ExpectError(api_->Get("/v2/topics"), 404, "NOT_FOUND");
  ExpectError(api_->Get("/v1/topics/t/nothing"), 404, "NOT_FOUND");
  // A path that has routes, but not for this method.
  ExpectError(api_->Post("/v1/topics", Json::object()), 405, "UNIMPLEMENTED");
}

// Routes once matched paths with std::regex, which recursed once a byte:
// a path like this one overflowed a connection thread's stack.
TEST_P(ApiTest, AVeryLongPathIsAnsweredLikeAnyOther) {
  const std::string id(7000, 'a');
  // No job has an id that long: a bad request.
  ExpectError(api_->Post("/v1/jobs/" + id + "/ack", {{"token", "1"}}), 400,
              "INVALID_ARGUMENT");
  ExpectError(api_->Get("/v1/topics/" + id + "/nothing"), 404, "NOT_FOUND");
  EXPECT_EQ(api_->Get("/v1/topics").status, 200);
}

// Nesting of 5,000 levels once overflowed a connection thread's stack on
// the ack list's route (its reader copied the list) and killed the server.
TEST_P(ApiTest, DeeplyNestedBodiesAreRefusedOnEveryRoute) {
  const auto nested = [](const std::string& field, int depth) {
    return absl::StrCat("{\"", field, "\":", std::string(depth, '['),
                        std::string(depth, ']'), "}");
  };
  for (const char* route : {"/v1/leases/ack", "/v1/topics/t/jobs",
                            "/v1/topics/t/reserve", "/v1/jobs/x/ack"}) {
    SCOPED_TRACE(route);
    ExpectError(api_->PostRaw(route, nested("leases", 5000)), 400,
                "INVALID_ARGUMENT");
    ExpectError(api_->PostRaw(route, nested("leases", 33)), 400,
                "INVALID_ARGUMENT");
  }
  ExpectError(api_->PostRaw("/v1/leases/ack", nested("leases", 2)), 400,
              "INVALID_ARGUMENT");
  EXPECT_EQ(api_->Get("/v1/topics").status, 200);
}

TEST_P(ApiTest, AnOversizedBodyIsRefused) {
  const std::string big(kMaxBody + 1, 'x');
  HttpReply r = api_->Post("/v1/topics/t/jobs", {{"payload", big}});
  ExpectError(r, 413, "RESOURCE_EXHAUSTED");
  EXPECT_EQ(api_->Get("/v1/topics/t/stats").json["ready"], 0);
  // The server is still there for the next request.
  EXPECT_EQ(api_->Post("/v1/topics/t/jobs", {{"payload", "small"}}).status,
            201);
}

}  // namespace
}  // namespace testing
}  // namespace delayq
