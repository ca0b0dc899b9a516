// Copyright delayq authors.
//
// Routes that add, read and cancel jobs; the lease routes and the errors
// are in lease_suite.cc and error_suite.cc.

#include "tests/serve/api_suite.h"

#include <sys/wait.h>

#include <algorithm>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace delayq {
namespace testing {

void ApiTest::SetUp() {
  store_url_ = GetParam().fresh_url();
  absl::StatusOr<std::unique_ptr<ServeProcess>> server =
      ServeProcess::Start(store_url_, {"--max-body", absl::StrCat(kMaxBody)});
  ASSERT_TRUE(server.ok()) << server.status();
  server_ = *std::move(server);
  api_ = std::make_unique<ApiClient>(server_->port());
}

void ApiTest::TearDown() {
  if (server_ == nullptr) return;
  api_.reset();
  const int status = server_->Stop();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << "delayq serve ended with wait status " << status;
}

std::string ApiTest::Add(const std::string& topic, Json body) {
  HttpReply r = api_->Post(absl::StrCat("/v1/topics/", topic, "/jobs"), body);
  EXPECT_EQ(r.status, 201) << r.body;
  return r.json.value("id", "");
}

Json ApiTest::ReserveOne(const std::string& topic) {
  HttpReply r = api_->Post(absl::StrCat("/v1/topics/", topic, "/reserve"),
                           Json::object());
  EXPECT_EQ(r.status, 200) << r.body;
  const Json leases = r.json.value("leases", Json::array());
  EXPECT_EQ(leases.size(), 1u) << r.body;
  return leases.empty() ? Json::object() : leases[0];
}

namespace {

// A flow in one request: jobs of several topics, a parent listed before
// the children it waits for.
// POST /v1/jobs/{id}/cancel-flow cancels the job and what it waits for,
// parents first, and says which; a finished job has no flow left.
TEST_P(ApiTest, AFlowIsCancelledFromItsLastJob) {
  const Json flow = {
      {"jobs",
       {{{"topic", "pages"},
         {"payload", "publish"},
         {"id", "publish"},
         {"after", {"thumb"}}},
        {{"topic", "images"},
         {"payload", "thumb"},
         {"id", "thumb"},
         {"after", {"upload"}}},
        {{"topic", "files"}, {"payload", "u"}, {"id", "upload"}}}}};
  ASSERT_EQ(api_->Post("/v1/flows", flow).status, 201);
  HttpReply cancelled =
      api_->Post("/v1/jobs/publish/cancel-flow", Json::object());
  ASSERT_EQ(cancelled.status, 200) << cancelled.body;
  EXPECT_EQ(cancelled.json["cancelled"],
            Json::array({"publish", "thumb", "upload"}));
  for (const char* id : {"publish", "thumb", "upload"}) {
    EXPECT_EQ(api_->Get(std::string("/v1/jobs/") + id).status, 404) << id;
  }
  EXPECT_EQ(api_->Post("/v1/jobs/publish/cancel-flow", Json::object()).status,
            404);
  EXPECT_EQ(api_->Post("/v1/jobs/x/cancel-flow", {{"all", true}}).status, 400);
}

TEST_P(ApiTest, AFlowIsAddedInOneRequest) {
  const Json flow = {
      {"jobs",
       {{{"topic", "pages"},
         {"payload", "publish"},
         {"id", "publish"},
         {"after", {"thumb", "upload"}}},
        {{"topic", "images"}, {"payload_base64", "/w=="}, {"id", "thumb"}},
        {{"topic", "files"},
         {"payload", "u"},
         {"id", "upload"},
         {"priority", 3}}}}};
  HttpReply added = api_->Post("/v1/flows", flow);
  ASSERT_EQ(added.status, 201) << added.body;
  EXPECT_EQ(added.json["ids"], Json::array({"publish", "thumb", "upload"}));
  EXPECT_EQ(api_->Get("/v1/jobs/publish").json["state"], "waiting");
  EXPECT_EQ(api_->Get("/v1/jobs/upload").json["priority"], 3);
  EXPECT_EQ(api_->Get("/v1/jobs/thumb").json["payload_base64"], "/w==");
  for (const char* topic : {"images", "files"}) {
    const Json lease = ReserveOne(topic);
    ASSERT_EQ(
        api_->Post("/v1/jobs/" + lease["job"]["id"].get<std::string>() + "/ack",
                   {{"token", lease["token"]}})
            .status,
        200);
  }
  EXPECT_EQ(ReserveOne("pages")["job"]["id"], "publish");

  // Refused whole: a cycle, a job without a topic, an unknown field.
  for (const Json& bad :
       {Json{
            {"jobs",
             {{{"topic", "t"}, {"payload", "a"}, {"id", "a"}, {"after", {"b"}}},
              {{"topic", "t"},
               {"payload", "b"},
               {"id", "b"},
               {"after", {"a"}}}}}},
        Json{{"jobs",
              {{{"topic", "t"}, {"payload", "a"}, {"id", "a"}},
               {{"payload", "b"}}}}},
        Json{{"jobs", {{{"topic", "t"}, {"payload", "a"}, {"colour", 1}}}}},
        Json{{"jobs", Json::array()}}, Json::object()}) {
    HttpReply refused = api_->Post("/v1/flows", bad);
    EXPECT_EQ(refused.status, 400) << bad.dump() << " " << refused.body;
  }
  EXPECT_EQ(api_->Get("/v1/jobs/a").status, 404);
}

// A job may wait for as many jobs as a flow holds besides it; each store
// keeps, settles and reads back that many dependencies (Redis once failed
// with INTERNAL: a script spread them over more values than Lua's stack
// holds).
TEST_P(ApiTest, AJobMayWaitForEveryOtherJobOfAFullFlow) {
  // Two jobs wait for all the others; a few of those are kept once acked,
  // with a result, spread over the list (its first and last, one between).
  constexpr int kDependencies = 9'998;
  const std::vector<int> kept = {0, 5'000, kDependencies - 1};
  Json jobs = Json::array();
  Json after = Json::array();
  Json cancelled = Json::array();
  for (int i = 0; i < kDependencies; ++i) {
    const std::string id = absl::StrCat("part-", i);
    const bool keep = std::find(kept.begin(), kept.end(), i) != kept.end();
    jobs.push_back({{"topic", keep ? "kept" : "parts"},
                    {"payload", "p"},
                    {"id", id},
                    {"keep_for_ms", keep ? 3'600'000 : 0}});
    after.push_back(id);
    if (!keep) cancelled.push_back(id);
  }
  jobs.push_back({{"topic", "whole"},
                  {"payload", "w"},
                  {"id", "runs"},
                  {"after", after},
                  {"on_dependency_failure", "run"}});
  jobs.push_back({{"topic", "whole"},
                  {"payload", "w"},
                  {"id", "fails"},
                  {"after", after}});
  // Some 700 KB of JSON: a server of the same store that takes it.
  absl::StatusOr<std::unique_ptr<ServeProcess>> big =
      ServeProcess::Start(store_url_, {"--max-body", absl::StrCat(4 << 20)});
  ASSERT_TRUE(big.ok()) << big.status();
  ApiClient api((*big)->port());
  HttpReply added = api.Post("/v1/flows", {{"jobs", jobs}});
  ASSERT_EQ(added.status, 201) << added.body.substr(0, 500);
  EXPECT_EQ(api.Get("/v1/jobs/runs").json["state"], "waiting");

  for (size_t i = 0; i < kept.size(); ++i) {
    const Json lease = ReserveOne("kept");
    ASSERT_EQ(
        api_->Post(absl::StrCat("/v1/jobs/",
                                lease["job"]["id"].get<std::string>(), "/ack"),
                   {{"token", lease["token"]}, {"result", "r"}})
            .status,
        200);
  }
  // The first to leave fails "fails"; "runs" runs once all have left.
  HttpReply gone = api.Post("/v1/bulk/cancel", {{"ids", cancelled}});
  ASSERT_EQ(gone.status, 200) << gone.body.substr(0, 500);
  EXPECT_EQ(gone.json["done"], cancelled.size()) << gone.body.substr(0, 500);
  EXPECT_EQ(api.Get("/v1/jobs/fails").json["state"], "dead");
  const Json lease = ReserveOne("whole");
  EXPECT_EQ(lease["job"]["id"], "runs");
  Json results = Json::array();
  for (int i : kept) {
    results.push_back({{"id", absl::StrCat("part-", i)}, {"result", "r"}});
  }
  // Every store hands the kept ones on.
  EXPECT_EQ(lease["dependency_results"], results);
  EXPECT_EQ((*big)->Stop(), 0);
}

// A batch over HTTP: opened with its completion job, a job joins it, the
// close and the job's ack release the completion job once.
TEST_P(ApiTest, ABatchReleasesItsCompletionJobOnceItsJobsFinished) {
  HttpReply opened = api_->Post(
      "/v1/batches", {{"topic", "sent"}, {"payload", "march"}, {"id", "b"}});
  ASSERT_EQ(opened.status, 201) << opened.body;
  EXPECT_EQ(opened.json["closed"], false);
  Add("send", {{"payload", "17"}, {"id", "i17"}, {"batch", "b"}});
  HttpReply closed = api_->Post("/v1/batches/b/close", Json::object());
  ASSERT_EQ(closed.status, 200) << closed.body;
  EXPECT_EQ(closed.json["pending"], 1);
  EXPECT_EQ(api_->Get("/v1/jobs/b").json["state"], "waiting");
  HttpReply late =
      api_->Post("/v1/topics/send/jobs", {{"payload", "18"}, {"batch", "b"}});
  EXPECT_EQ(late.status, 409) << late.body;

  const Json lease = ReserveOne("send");
  ASSERT_EQ(lease["job"]["id"], "i17");
  ASSERT_EQ(api_->Post("/v1/jobs/i17/ack", {{"token", lease["token"]}}).status,
            200);
  HttpReply done = api_->Get("/v1/batches/b");
  ASSERT_EQ(done.status, 200) << done.body;
  EXPECT_EQ(done.json["done"], 1);
  EXPECT_EQ(done.json["complete"], true);
  EXPECT_EQ(ReserveOne("sent")["job"]["id"], "b");
  EXPECT_EQ(api_->Get("/v1/batches/nobatch").status, 404);
}

TEST_P(ApiTest, AddGetAndCancel) {
  const std::string id = Add("mail", {{"payload", "hello"}});
  ASSERT_FALSE(id.empty());
  HttpReply got = api_->Get("/v1/jobs/" + id);
  ASSERT_EQ(got.status, 200) << got.body;
  EXPECT_EQ(got.json["id"], id);
  EXPECT_EQ(got.json["topic"], "mail");
  EXPECT_EQ(got.json["state"], "ready");
  EXPECT_EQ(got.json["payload"], "hello");
  EXPECT_EQ(got.json["attempts"], 0);
  EXPECT_EQ(got.json["max_attempts"], 3);
  EXPECT_TRUE(got.json["deadline"].is_null());

  HttpReply cancelled = api_->Delete("/v1/jobs/" + id);
  EXPECT_EQ(cancelled.status, 200) << cancelled.body;
  HttpReply gone = api_->Get("/v1/jobs/" + id);
  EXPECT_EQ(gone.status, 404);
  EXPECT_EQ(gone.code(), "NOT_FOUND");
  HttpReply again = api_->Delete("/v1/jobs/" + id);
  EXPECT_EQ(again.status, 404);
  EXPECT_EQ(again.code(), "NOT_FOUND");
}

TEST_P(ApiTest, AddTakesEveryOption) {
  const std::string id = Add("orders", {{"payload", "42"},
                                        {"id", "order-42"},
                                        {"delay_ms", 3'600'000},
                                        {"ttr_ms", 5000},
                                        {"priority", -3},
                                        {"max_attempts", 7},
                                        {"backoff", "fixed:5s"}});
  EXPECT_EQ(id, "order-42");
  HttpReply got = api_->Get("/v1/jobs/order-42");
  ASSERT_EQ(got.status, 200);
  EXPECT_EQ(got.json["state"], "delayed");
  EXPECT_EQ(got.json["ttr_ms"], 5000);
  EXPECT_EQ(got.json["priority"], -3);
  EXPECT_EQ(got.json["max_attempts"], 7);
  EXPECT_EQ(got.json["backoff"], "fixed:5s");

  HttpReply at = api_->Post(
      "/v1/topics/orders/jobs",
      {{"payload", "x"}, {"id", "at-job"}, {"run_at", "2099-01-02T03:04:05Z"}});
  ASSERT_EQ(at.status, 201) << at.body;
  EXPECT_EQ(api_->Get("/v1/jobs/at-job").json["run_at"],
            "2099-01-02T03:04:05.000Z");
}

// Expiry and the dedup window, as JobOptions has them.
TEST_P(ApiTest, AddTakesExpiryAndADedupWindow) {
  Add("offers", {{"payload", "p"},
                 {"id", "offer-1"},
                 {"delay_ms", 60'000},
                 {"expire_after_ms", 120'000},
                 {"discard_expired", true}});
  HttpReply got = api_->Get("/v1/jobs/offer-1");
  ASSERT_EQ(got.status, 200);
  EXPECT_TRUE(got.json.contains("expire_at")) << got.body;
  EXPECT_EQ(got.json["discard_expired"], true);
  EXPECT_FALSE(got.json.contains("unique_for_ms"));
  Add("offers", {{"payload", "p"},
                 {"id", "offer-2"},
                 {"expire_at", "2099-01-02T03:04:05Z"},
                 {"unique_for_ms", 3'600'000}});
  got = api_->Get("/v1/jobs/offer-2");
  EXPECT_EQ(got.json["expire_at"], "2099-01-02T03:04:05.000Z");
  EXPECT_EQ(got.json["unique_for_ms"], 3'600'000);
  EXPECT_FALSE(got.json.contains("discard_expired"));
  // Once it is gone, its id stays taken for the window.
  ASSERT_EQ(api_->Delete("/v1/jobs/offer-2").status, 200);
  HttpReply again = api_->Post("/v1/topics/offers/jobs",
                               {{"payload", "p"}, {"id", "offer-2"}});
  EXPECT_EQ(again.status, 409) << again.body;
  for (const Json& bad : {Json{{"payload", "p"}, {"expire_after_ms", -1}},
                          Json{{"payload", "p"}, {"expire_at", 5}},
                          Json{{"payload", "p"}, {"discard_expired", "yes"}},
                          Json{{"payload", "p"}, {"unique_for_ms", "1h"}}}) {
    HttpReply refused = api_->Post("/v1/topics/offers/jobs", bad);
    EXPECT_EQ(refused.status, 400) << bad.dump() << refused.body;
  }
}

// A query parameter a route does not read is refused, as an unknown field.
TEST_P(ApiTest, UnknownQueryParametersAreRefused) {
  Add("q", {{"payload", "p"}, {"id", "q-1"}});
  HttpReply offset = api_->Get("/v1/topics/q/jobs?offset=5");
  EXPECT_EQ(offset.status, 400);
  EXPECT_EQ(offset.code(), "INVALID_ARGUMENT");
  EXPECT_NE(offset.body.find("'offset'"), std::string::npos) << offset.body;
  EXPECT_EQ(api_->Get("/v1/topics?x=1").status, 400);
  EXPECT_EQ(api_->Post("/v1/topics/q/pause?now=1", Json::object()).status, 400);
  EXPECT_EQ(api_->Get("/v1/topics/q/stats").json["paused"], false);
  EXPECT_EQ(api_->Get("/v1/topics/q/jobs?state=ready&limit=5").status, 200);
  EXPECT_EQ(api_->Get("/v1/jobs/q-1?wait=1ms").status, 200);
}

TEST_P(ApiTest, ReplaceMovesALiveJobAndAReusedIdIsRefused) {
  Add("boss", {{"payload", "v1"}, {"id", "boss-1"}, {"delay_ms", 90'000}});
  HttpReply reused =
      api_->Post("/v1/topics/boss/jobs", {{"payload", "v2"}, {"id", "boss-1"}});
  EXPECT_EQ(reused.status, 409);
  EXPECT_EQ(reused.code(), "ALREADY_EXISTS");
  Add("boss", {{"payload", "v2"},
               {"id", "boss-1"},
               {"delay_ms", 180'000},
               {"replace", true}});
  HttpReply got = api_->Get("/v1/jobs/boss-1");
  EXPECT_EQ(got.json["payload"], "v2");
  EXPECT_EQ(got.json["state"], "delayed");
}

TEST_P(ApiTest, BinaryPayloadsTravelAsBase64) {
  const std::string bytes("\x00\xff\x01 binary\x80", 11);
  const std::string id =
      Add("bin", {{"payload_base64", absl::Base64Escape(bytes)}});
  HttpReply got = api_->Get("/v1/jobs/" + id);
  ASSERT_EQ(got.status, 200);
  EXPECT_FALSE(got.json.contains("payload"));
  std::string back;
  ASSERT_TRUE(absl::Base64Unescape(
      got.json["payload_base64"].get<std::string>(), &back));
  EXPECT_EQ(back, bytes);
  // Text that is valid UTF-8 comes back as text, whichever way it came in.
  const std::string text_id =
      Add("bin", {{"payload_base64", absl::Base64Escape("h\xc3\xa9llo")}});
  EXPECT_EQ(api_->Get("/v1/jobs/" + text_id).json["payload"], "h\xc3\xa9llo");
}

// Text that JSON must escape comes back whole from get, list and reserve,
// as a string, and so do ids and errors that hold it.
TEST_P(ApiTest, TextThatNeedsEscapingComesBackWhole) {
  const std::string text =
      std::string("quote \" backslash \\ newline \n tab \t cr \r ") +
      "bell \x07 nul " + std::string(1, '\0') + " del \x7f \xe2\x82\xac";
  const std::string id = Add("esc", {{"payload", text}, {"id", "id \"1\"\\"}});
  EXPECT_EQ(id, "id \"1\"\\");
  HttpReply got = api_->Get("/v1/jobs/id%20%221%22%5C");
  ASSERT_EQ(got.status, 200) << got.body;
  EXPECT_EQ(got.json["payload"], text);
  EXPECT_EQ(got.json["id"], id);
  EXPECT_EQ(api_->Get("/v1/topics/esc/jobs").json["jobs"][0]["payload"], text);
  const Json lease = ReserveOne("esc");
  EXPECT_EQ(lease["job"]["payload"], text);
  EXPECT_EQ(lease["job"]["id"], id);
  HttpReply failed = api_->Post("/v1/jobs/id%20%221%22%5C/fail",
                                {{"token", lease["token"]}, {"error", text}});
  ASSERT_EQ(failed.status, 200) << failed.body;
  EXPECT_EQ(api_->Get("/v1/jobs/id%20%221%22%5C").json["last_error"], text);
}

TEST_P(ApiTest, BatchAddsInOrderAndListShowsThem) {
  HttpReply batch = api_->Post("/v1/topics/b/jobs/batch",
                               {{"payloads", {"one", "two", "three"}}});
  ASSERT_EQ(batch.status, 201) << batch.body;
  ASSERT_EQ(batch.json["ids"].size(), 3u);
  HttpReply b64 = api_->Post(
      "/v1/topics/b/jobs/batch",
      {{"payloads_base64", {absl::Base64Escape("four")}}, {"priority", 5}});
  ASSERT_EQ(b64.status, 201) << b64.body;

  HttpReply list = api_->Get("/v1/topics/b/jobs?state=ready&limit=10");
  ASSERT_EQ(list.status, 200) << list.body;
  ASSERT_EQ(list.json["jobs"].size(), 4u);
  EXPECT_EQ(list.json["jobs"][0]["payload"], "one");
  EXPECT_EQ(list.json["jobs"][2]["payload"], "three");
  EXPECT_EQ(list.json["jobs"][3]["payload"], "four");
  EXPECT_EQ(api_->Get("/v1/topics/b/jobs?limit=2").json["jobs"].size(), 2u);
  EXPECT_EQ(api_->Get("/v1/topics/b/jobs?state=dead").json["jobs"].size(), 0u);
}

// Pages of a list follow each other by cursor; a cursor the list did not
// give is a 400 that says so.
TEST_P(ApiTest, ListPagesFollowTheirCursor) {
  HttpReply batch = api_->Post("/v1/topics/pg/jobs/batch",
                               {{"payloads", {"a", "b", "c", "d", "e"}}});
  ASSERT_EQ(batch.status, 201) << batch.body;
  std::vector<std::string> seen;
  std::string cursor;
  int pages = 0;
  do {
    HttpReply page =
        api_->Get(absl::StrCat("/v1/topics/pg/jobs?state=ready&limit=2",
                               cursor.empty() ? "" : "&cursor=", cursor));
    ASSERT_EQ(page.status, 200) << page.body;
    for (const auto& job : page.json["jobs"]) {
      seen.push_back(job["payload"].get<std::string>());
    }
    cursor = page.json["next_cursor"].get<std::string>();
    ASSERT_LT(++pages, 10);
  } while (!cursor.empty());
  EXPECT_EQ(pages, 3);
  EXPECT_EQ(seen, (std::vector<std::string>{"a", "b", "c", "d", "e"}));

  HttpReply bad = api_->Get("/v1/topics/pg/jobs?cursor=not-a-cursor");
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(bad.code(), "INVALID_ARGUMENT");
  EXPECT_NE(bad.body.find("bad cursor"), std::string::npos) << bad.body;
  HttpReply first = api_->Get("/v1/topics/pg/jobs?state=ready&limit=1");
  const std::string ready_cursor = first.json["next_cursor"].get<std::string>();
  ASSERT_FALSE(ready_cursor.empty());
  HttpReply other_state =
      api_->Get("/v1/topics/pg/jobs?state=dead&cursor=" + ready_cursor);
  EXPECT_EQ(other_state.status, 400) << other_state.body;
}

// GET /v1/workers lists live leases with who holds them and since when,
// a page at a time; a reserved job shows its holder too.
TEST_P(ApiTest, WorkersListsLiveLeasesWithTheirHolders) {
  Add("w1", {{"payload", "a"}, {"id", "wa"}});
  Add("w2", {{"payload", "b"}, {"id", "wb"}});
  Add("w2", {{"payload", "c"}, {"id", "wc"}});
  const Json first = ReserveOne("w1");
  ReserveOne("w2");
  HttpReply all = api_->Get("/v1/workers");
  ASSERT_EQ(all.status, 200) << all.body;
  ASSERT_EQ(all.json["leases"].size(), 2u) << all.body;
  EXPECT_EQ(all.json["next_cursor"], "");
  const Json& lease = all.json["leases"][0];
  EXPECT_EQ(lease["topic"], "w1");
  EXPECT_EQ(lease["id"], "wa");
  EXPECT_EQ(lease["attempts"], 1);
  EXPECT_EQ(lease["deadline"], first["deadline"]);
  EXPECT_FALSE(lease["holder"].get<std::string>().empty()) << all.body;
  EXPECT_TRUE(lease["reserved_at"].is_string()) << all.body;
  HttpReply job = api_->Get("/v1/jobs/wa");
  EXPECT_EQ(job.json["holder"], lease["holder"]);
  EXPECT_EQ(job.json["reserved_at"], lease["reserved_at"]);

  HttpReply page = api_->Get("/v1/workers?limit=1");
  ASSERT_EQ(page.status, 200) << page.body;
  ASSERT_EQ(page.json["leases"].size(), 1u);
  const std::string cursor = page.json["next_cursor"];
  ASSERT_FALSE(cursor.empty());
  HttpReply rest = api_->Get("/v1/workers?limit=1&cursor=" + cursor);
  ASSERT_EQ(rest.status, 200) << rest.body;
  ASSERT_EQ(rest.json["leases"].size(), 1u);
  EXPECT_EQ(rest.json["leases"][0]["topic"], "w2");
  EXPECT_EQ(rest.json["next_cursor"], "");
  // A reservation may name its worker: the leases are held by it.
  Add("w3", {{"payload", "d"}, {"id", "wd"}});
  HttpReply named =
      api_->Post("/v1/topics/w3/reserve", {{"worker", "host-9:42"}});
  ASSERT_EQ(named.status, 200) << named.body;
  ASSERT_EQ(named.json["leases"].size(), 1u);
  EXPECT_EQ(named.json["leases"][0]["job"]["holder"], "host-9:42");
  EXPECT_EQ(api_->Get("/v1/jobs/wd").json["holder"], "host-9:42");
  for (const Json& bad :
       {Json(""), Json("two words"), Json(42), Json(std::string(129, 'w'))}) {
    HttpReply refused = api_->Post("/v1/topics/w3/reserve", {{"worker", bad}});
    EXPECT_EQ(refused.status, 400) << bad.dump();
    EXPECT_NE(refused.body.find("'worker'"), std::string::npos) << refused.body;
  }
  EXPECT_EQ(api_->Get("/v1/workers?cursor=%25%25").status, 400);
  EXPECT_EQ(api_->Get("/v1/workers?limit=0").status, 400);
}

TEST_P(ApiTest, StatsTopicsPauseAndResume) {
  Add("t1", {{"payload", "a"}});
  Add("t1", {{"payload", "b"}, {"delay_ms", 600'000}});
  Add("t2", {{"payload", "c"}});
  HttpReply stats = api_->Get("/v1/topics/t1/stats");
  ASSERT_EQ(stats.status, 200);
  EXPECT_EQ(stats.json["ready"], 1);
  EXPECT_EQ(stats.json["delayed"], 1);
  EXPECT_EQ(stats.json["paused"], false);

  HttpReply paused = api_->Post("/v1/topics/t1/pause", Json::object());
  ASSERT_EQ(paused.status, 200) << paused.body;
  EXPECT_EQ(paused.json["paused"], true);
  HttpReply none = api_->Post("/v1/topics/t1/reserve", Json::object());
  EXPECT_EQ(none.json["leases"].size(), 0u) << none.body;

  HttpReply topics = api_->Get("/v1/topics");
  ASSERT_EQ(topics.status, 200);
  ASSERT_EQ(topics.json["topics"].size(), 2u);
  EXPECT_EQ(topics.json["topics"][0]["topic"], "t1");
  EXPECT_EQ(topics.json["topics"][0]["paused"], true);
  EXPECT_EQ(topics.json["topics"][1]["topic"], "t2");
  EXPECT_EQ(topics.json["topics"][1]["ready"], 1);

  HttpReply resumed = api_->Post("/v1/topics/t1/resume", Json::object());
  EXPECT_EQ(resumed.json["paused"], false);
  EXPECT_EQ(ReserveOne("t1")["job"]["payload"], "a");
}

TEST_P(ApiTest, MetricsShowTheStoreAndTheEvents) {
  Add("m", {{"payload", "a"}});
  Add("m", {{"payload", "b"}});
  const Json lease = ReserveOne("m");
  ASSERT_EQ(
      api_->Post("/v1/jobs/" + lease["job"]["id"].get<std::string>() + "/ack",
                 {{"token", lease["token"]}})
          .status,
      200);
  HttpReply metrics = api_->Get("/metrics");
  ASSERT_EQ(metrics.status, 200);
  const std::string& text = metrics.body;
  EXPECT_NE(text.find("delayq_jobs{topic=\"m\",state=\"ready\"} 1\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("delayq_job_events_total{topic=\"m\",event=\"enqueued\"} "
                      "2\n"),
            std::string::npos)
      << text;
  EXPECT_NE(
      text.find("delayq_job_events_total{topic=\"m\",event=\"succeeded\"} "
                "1\n"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("delayq_handler_seconds_count{topic=\"m\"} 1\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("delayq_store_call_seconds_count{call=\"ack\"} 1\n"),
            std::string::npos)
      << text;
}

}  // namespace
}  // namespace testing
}  // namespace delayq
