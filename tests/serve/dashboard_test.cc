// Copyright delayq authors.
//
// The dashboard in a real headless Chromium against a real server on a
// SQLite store the test filled: the page loads and shows the store's
// counts, lists a topic's jobs with their payloads and one job's details,
// and a kick of a dead job from the page moves it to ready.

#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "tests/serve/chromium_page.h"
#include "tests/serve/serve_process.h"
#include "tests/testing/temp_path.h"

namespace delayq {
namespace testing {
namespace {

// JavaScript: the text of the topic row's cell for `state`.
std::string Cell(const std::string& topic, const std::string& state) {
  return absl::StrCat("(document.querySelector('tr[data-topic=\"", topic,
                      "\"] td.", state, "') || {}).textContent");
}

std::string CellIs(const std::string& topic, const std::string& state, int n) {
  return absl::StrCat(Cell(topic, state), " === '", n, "'");
}

class DashboardTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto server = ServeProcess::Start("sqlite:" + FreshDbPath("dashboard"));
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    api_ = std::make_unique<ApiClient>(server_->port());
  }

  void Fill() {
    for (const char* payload :
         {"{\"to\":\"ann@example.com\"}", "{\"to\":\"bob@example.com\"}"}) {
      ASSERT_EQ(
          api_->Post("/v1/topics/mail/jobs", {{"payload", payload}}).status,
          201);
    }
    ASSERT_EQ(api_->Post("/v1/topics/mail/jobs",
                         {{"payload", "later"}, {"delay_ms", 3'600'000}})
                  .status,
              201);
    ASSERT_EQ(api_->Post("/v1/topics/orders/jobs", {{"payload", "order-7"},
                                                    {"id", "order-7"},
                                                    {"max_attempts", 1}})
                  .status,
              201);
    HttpReply lease = api_->Post("/v1/topics/orders/reserve", Json::object());
    ASSERT_EQ(lease.json["leases"].size(), 1u);
    ASSERT_EQ(api_->Post("/v1/jobs/order-7/fail",
                         {{"token", lease.json["leases"][0]["token"]},
                          {"error", "payment gateway: 503"}})
                  .status,
              200);
    ASSERT_EQ(api_->Get("/v1/jobs/order-7").json["state"], "dead");
    // Three receipts sent before the page opens: the chart must show them
    // from the store's counts on its first load.
    for (int i = 0; i < 3; ++i) {
      ASSERT_EQ(
          api_->Post("/v1/topics/receipts/jobs", {{"payload", "r"}}).status,
          201);
      HttpReply r = api_->Post("/v1/topics/receipts/reserve", Json::object());
      ASSERT_EQ(r.json["leases"].size(), 1u);
      const Json& l = r.json["leases"][0];
      ASSERT_EQ(
          api_->Post(absl::StrCat("/v1/jobs/",
                                  l["job"]["id"].get<std::string>(), "/ack"),
                     {{"token", l["token"]}})
              .status,
          200);
    }
    ASSERT_EQ(
        api_->Put("/v1/topics/mail/limit", {{"rate", 50}, {"concurrency", 10}})
            .status,
        200);
    ASSERT_EQ(api_->Put("/v1/schedules/report.nightly",
                        {{"spec", "0 3 * * *"},
                         {"topic", "reports"},
                         {"time_zone", "Europe/Berlin"}})
                  .status,
              200);
  }

  std::string Url() const {
    return absl::StrCat("http://127.0.0.1:", server_->port(), "/");
  }

  std::unique_ptr<ServeProcess> server_;
  std::unique_ptr<ApiClient> api_;
};

TEST_F(DashboardTest, ShowsTheStoreAndKicksADeadJobToReady) {
  Fill();
  auto page = ChromiumPage::Open(Url());
  ASSERT_TRUE(page.ok()) << page.status();
  ChromiumPage& p = **page;

  ASSERT_TRUE(p.WaitFor("document.body.dataset.loaded === 'true'"))
      << "the dashboard did not load";
  EXPECT_TRUE(p.WaitFor(CellIs("mail", "ready", 2)));
  EXPECT_TRUE(p.WaitFor(CellIs("mail", "delayed", 1)));
  EXPECT_TRUE(p.WaitFor(CellIs("orders", "dead", 1)));
  EXPECT_TRUE(p.WaitFor(CellIs("orders", "ready", 0)));
  // The chart, on its first load, from the counts written before.
  EXPECT_TRUE(
      p.WaitFor("document.querySelector('#chart').dataset.done === "
                "'3'"));
  // The topic's limit, and the schedule with its next run.
  EXPECT_TRUE(
      p.WaitFor("document.querySelector('tr[data-topic=\"mail\"] .badge.limit')"
                ".textContent === 'rate 50/1s, concurrency 10'"));
  EXPECT_TRUE(p.WaitFor(
      "(() => { const r = document.querySelector("
      "'#schedules tr[data-schedule=\"report.nightly\"]');"
      " return !!r && r.textContent.includes('0 3 * * * (Europe/Berlin)') &&"
      " r.textContent.includes('reports') && r.textContent.includes('in '); "
      "})()"));

  // A topic's jobs, with their payloads.
  ASSERT_TRUE(p.Evaluate("document.querySelector('tr[data-topic=\"mail\"] "
                         "td.ready a').click(), true")
                  .ok());
  EXPECT_TRUE(
      p.WaitFor("document.querySelectorAll('#jobs tbody tr').length === 2 && "
                "document.querySelector('#jobs tbody').textContent.includes("
                "'ann@example.com')"));

  // The dead job's details.
  ASSERT_TRUE(p.Evaluate("document.querySelector('tr[data-topic=\"orders\"] "
                         "td.dead a').click(), true")
                  .ok());
  EXPECT_TRUE(p.WaitFor(
      "!!document.querySelector('#jobs tbody tr[data-id=\"order-7\"]')"));
  ASSERT_TRUE(p.Evaluate("document.querySelector('#jobs tbody "
                         "tr[data-id=\"order-7\"] a').click(), true")
                  .ok());
  EXPECT_TRUE(p.WaitFor(
      "document.querySelector('#job-payload').textContent === 'order-7' && "
      "document.querySelector('#job-fields').textContent.includes("
      "'payment gateway: 503')"));
  // Its history: enqueued, reserved, failed, dead.
  EXPECT_TRUE(
      p.WaitFor("Array.from(document.querySelectorAll('#job-history li'), "
                "(li) => li.dataset.event).join(',') === "
                "'enqueued,reserved,failed,dead'"));

  if (const char* out = std::getenv("TEST_UNDECLARED_OUTPUTS_DIR")) {
    absl::StatusOr<std::string> png = p.Screenshot();
    ASSERT_TRUE(png.ok()) << png.status();
    std::ofstream(absl::StrCat(out, "/dashboard.png"), std::ios::binary)
        << *png;
  }

  // The state tabs carry the topic's counts.
  EXPECT_TRUE(
      p.WaitFor("document.querySelector('#states "
                "button[data-state=\"dead\"]').textContent === 'dead 1'"));
  // Find a job by its id.
  ASSERT_TRUE(
      p.Evaluate("document.querySelector('#job-close').click(), "
                 "document.querySelector('#find-id').value = 'order-7', "
                 "document.querySelector('#find button').click(), true")
          .ok());
  EXPECT_TRUE(
      p.WaitFor("!document.querySelector('#job-card').hidden && "
                "document.querySelector('#job-id').textContent === "
                "'order-7'"));

  // Run a delayed job now from the page.
  ASSERT_TRUE(p.Evaluate("document.querySelector('tr[data-topic=\"mail\"] "
                         "td.delayed a').click(), true")
                  .ok());
  ASSERT_TRUE(
      p.WaitFor("!!document.querySelector('button[data-action=\"promote\"]')"));
  ASSERT_TRUE(p.Evaluate("document.querySelector('button[data-action="
                         "\"promote\"]').click(), true")
                  .ok());
  EXPECT_TRUE(p.WaitFor(CellIs("mail", "ready", 3)));
  EXPECT_TRUE(p.WaitFor(CellIs("mail", "delayed", 0)));

  // Kick from the page: the store has the job ready again, and so does
  // the page.
  ASSERT_TRUE(p.Evaluate("document.querySelector('button[data-action=\"kick\"]"
                         "[data-topic=\"orders\"]').click(), true")
                  .ok());
  for (int i = 0;
       i < 600 && api_->Get("/v1/jobs/order-7").json["state"] != "ready"; ++i) {
    absl::SleepFor(absl::Milliseconds(50));
  }
  EXPECT_EQ(api_->Get("/v1/jobs/order-7").json["state"], "ready");
  EXPECT_EQ(api_->Get("/v1/topics/orders/stats").json["dead"], 0);
  EXPECT_TRUE(p.WaitFor(CellIs("orders", "ready", 1)));
  EXPECT_TRUE(p.WaitFor(CellIs("orders", "dead", 0)));

  // Purge a topic's dead jobs from the page (its confirmation accepted).
  ASSERT_EQ(api_->Post("/v1/topics/graves/jobs",
                       {{"payload", "x"}, {"id", "g1"}, {"max_attempts", 1}})
                .status,
            201);
  HttpReply grave = api_->Post("/v1/topics/graves/reserve", Json::object());
  ASSERT_EQ(grave.json["leases"].size(), 1u);
  ASSERT_EQ(api_->Post("/v1/jobs/g1/fail",
                       {{"token", grave.json["leases"][0]["token"]}})
                .status,
            200);
  EXPECT_TRUE(p.WaitFor(CellIs("graves", "dead", 1)));
  ASSERT_TRUE(p.Evaluate("window.confirm = () => true, document.querySelector("
                         "'button[data-action=\"purge\"][data-topic="
                         "\"graves\"]').click(), true")
                  .ok());
  for (int i = 0;
       i < 600 && api_->Get("/v1/topics/graves/stats").json["dead"] != 0; ++i) {
    absl::SleepFor(absl::Milliseconds(50));
  }
  EXPECT_EQ(api_->Get("/v1/jobs/g1").status, 404);
}

TEST_F(DashboardTest, AssetsAndTheApiDescriptionNeedNoToken) {
  HttpReply index = api_->Get("/");
  EXPECT_EQ(index.status, 200);
  EXPECT_NE(index.body.find("<title>delayq</title>"), std::string::npos);
  EXPECT_EQ(api_->Get("/ui/app.js").status, 200);
  EXPECT_EQ(api_->Get("/ui/style.css").status, 200);
  HttpReply doc = api_->Get("/v1/openapi.yaml");
  EXPECT_EQ(doc.status, 200);
  EXPECT_EQ(doc.body.rfind("openapi: 3", 0), 0u) << doc.body.substr(0, 40);
  EXPECT_EQ(api_->Get("/ui/nothing.js").status, 404);
}

// Topics named like the properties every JavaScript object has get no
// badge of a limit they do not have.
TEST_F(DashboardTest, ATopicNamedLikeAnObjectPropertyHasNoBogusBadge) {
  for (const char* topic : {"__proto__", "constructor", "toString"}) {
    ASSERT_EQ(api_->Post(absl::StrCat("/v1/topics/", topic, "/jobs"),
                         {{"payload", "x"}})
                  .status,
              201);
  }
  auto page = ChromiumPage::Open(Url());
  ASSERT_TRUE(page.ok()) << page.status();
  ChromiumPage& p = **page;
  ASSERT_TRUE(p.WaitFor("document.body.dataset.loaded === 'true'"));
  EXPECT_TRUE(p.WaitFor(CellIs("__proto__", "ready", 1)));
  EXPECT_TRUE(p.WaitFor(CellIs("toString", "ready", 1)));
  absl::StatusOr<nlohmann::json> badges =
      p.Evaluate("document.querySelectorAll('#topics .badge').length");
  ASSERT_TRUE(badges.ok()) << badges.status();
  EXPECT_EQ(*badges, 0);
}

}  // namespace
}  // namespace testing
}  // namespace delayq
