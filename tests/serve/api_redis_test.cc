// Copyright delayq authors.
//
// The HTTP API suite on Redis: one redis-server for the binary, a fresh
// namespace for each test. Then what a sharded namespace adds to a route:
// a flow is stored all or nothing, so one whose ids lie on several shards
// is refused.

#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "tests/redis/redis_test_server.h"
#include "tests/serve/api_suite.h"

namespace delayq {
namespace testing {
namespace {

INSTANTIATE_TEST_SUITE_P(Redis, ApiTest,
                         ::testing::Values(StoreUrlFactory{"redis",
                                                           FreshRedisUrl}),
                         StoreUrlFactoryName);

TEST(ShardedApiTest, AFlowAcrossShardsIsABadRequestAndStoresNothing) {
  absl::StatusOr<std::unique_ptr<ServeProcess>> server =
      ServeProcess::Start(absl::StrCat(FreshRedisUrl(), "&shards=3"));
  ASSERT_TRUE(server.ok()) << server.status();
  ApiClient api((*server)->port());
  // "step-0" and "step-1" hash to shards 0 and 1 of 3 (CRC16 of the id).
  const Json across = {
      {"jobs",
       {{{"topic", "t"}, {"payload", "a"}, {"id", "step-0"}},
        {{"topic", "t"}, {"payload", "b"}, {"id", "step-1"}}}}};
  HttpReply refused = api.Post("/v1/flows", across);
  EXPECT_EQ(refused.status, 400) << refused.body;
  EXPECT_THAT(refused.json.value("message", ""),
              ::testing::HasSubstr("a flow is stored all or nothing"));
  EXPECT_EQ(api.Get("/v1/jobs/step-0").status, 404);
  EXPECT_EQ(api.Get("/v1/jobs/step-1").status, 404);

  // Ids of one tag are stored, and so are ids the server makes: they take
  // the flow's tag.
  const Json tagged = {
      {"jobs",
       {{{"topic", "t"}, {"payload", "a"}, {"id", "{order-17}:render"}},
        {{"topic", "t"}, {"payload", "b"}},
        {{"topic", "t"}, {"payload", "c"}, {"after", {"{order-17}:render"}}}}}};
  HttpReply added = api.Post("/v1/flows", tagged);
  ASSERT_EQ(added.status, 201) << added.body;
  for (const Json& id : added.json["ids"]) {
    EXPECT_THAT(id.get<std::string>(), ::testing::StartsWith("{order-17}:"));
  }
}

}  // namespace
}  // namespace testing
}  // namespace delayq
