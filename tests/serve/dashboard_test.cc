// Copyright delayq authors.
//
// The dashboard in a real headless Chromium against a real server on a
// SQLite store the test filled: the page loads and shows the store's
// counts, lists a topic's jobs with their payloads and one job's details,
// and a kick of a dead job from the page moves it to ready.

#include <cstdlib>
#include <fstream>
#include <iostream>
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

// JavaScript: `text` as a string literal.
std::string Quote(const std::string& text) { return Json(text).dump(); }

// JavaScript: types `value` into the field `name` of the form `form`.
std::string Type(const std::string& form, const std::string& name,
                 const std::string& value) {
  return absl::StrCat("document.querySelector('", form, "').elements.", name,
                      ".value = ", Quote(value), ";");
}

// JavaScript: true once the text of `sel` is shown and contains `text`.
std::string ShowsText(const std::string& sel, const std::string& text) {
  return absl::StrCat("(() => { const e = document.querySelector('", sel,
                      "'); return !!e && !e.hidden && e.textContent.includes(",
                      Quote(text), "); })()");
}

// JavaScript: clicks the first element `sel` matches.
std::string Click(const std::string& sel) {
  return absl::StrCat("document.querySelector(", Quote(sel), ").click(), true");
}

// JavaScript: how many rows the jobs table shows.
constexpr char kJobRows[] =
    "document.querySelectorAll('#jobs tbody tr').length";

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

  // Opens the dashboard in page_ with its refresh off, so that what it
  // shows changes only with the test's clicks, and every confirmation
  // accepted.
  void OpenPage() {
    auto page = ChromiumPage::Open(Url());
    ASSERT_TRUE(page.ok()) << page.status();
    page_ = *std::move(page);
    ASSERT_TRUE(page_->WaitFor("document.body.dataset.loaded === 'true'"))
        << "the dashboard did not load";
    ASSERT_TRUE(page_
                    ->Evaluate("const r = document.querySelector('#refresh');"
                               "r.value = '0'; r.dispatchEvent(new "
                               "Event('change')); window.confirm = () => "
                               "true; true")
                    .ok());
  }

  // Runs `js` in the page; fails the test when it throws.
  void Run(const std::string& js) {
    absl::StatusOr<Json> v = page_->Evaluate(js);
    ASSERT_TRUE(v.ok()) << js << ": " << v.status();
  }

  // Adds the job `id` to `topic` and lets its only attempt fail.
  void AddDead(const std::string& topic, const std::string& id) {
    ASSERT_EQ(api_->Post(absl::StrCat("/v1/topics/", topic, "/jobs"),
                         {{"payload", id}, {"id", id}, {"max_attempts", 1}})
                  .status,
              201);
    HttpReply lease = api_->Post(absl::StrCat("/v1/topics/", topic, "/reserve"),
                                 Json::object());
    ASSERT_EQ(lease.json["leases"].size(), 1u);
    ASSERT_EQ(api_->Post(absl::StrCat("/v1/jobs/", id, "/fail"),
                         {{"token", lease.json["leases"][0]["token"]}})
                  .status,
              200);
  }

  std::string State(const std::string& id) {
    return api_->Get(absl::StrCat("/v1/jobs/", id)).json.value("state", "");
  }

  std::unique_ptr<ServeProcess> server_;
  std::unique_ptr<ApiClient> api_;
  std::unique_ptr<ChromiumPage> page_;
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

// A topic's limit set from its row's form, the server's word on bad
// input, and a limit cleared; a topic with a limit and no jobs is listed.
TEST_F(DashboardTest, SetsAndClearsATopicsLimit) {
  ASSERT_EQ(api_->Post("/v1/topics/mail/jobs", {{"payload", "x"}}).status, 201);
  ASSERT_EQ(api_->Put("/v1/topics/quiet/limit", {{"concurrency", 2}}).status,
            200);
  ASSERT_NO_FATAL_FAILURE(OpenPage());
  ChromiumPage& p = *page_;
  EXPECT_TRUE(p.WaitFor(CellIs("quiet", "ready", 0)))
      << "a limited topic without jobs is not listed";

  Run(Click("button[data-action=\"limit\"][data-topic=\"mail\"]"));
  ASSERT_TRUE(p.WaitFor("!document.querySelector('#limit-card').hidden"));
  Run(Type("#limit-form", "rate", "fifty"));
  Run(Click("#limit-form button:not([type])"));
  EXPECT_TRUE(
      p.WaitFor(ShowsText("#limit-error", "field 'rate' must be a whole")));
  Run(Type("#limit-form", "rate", "0") +
      Type("#limit-form", "concurrency", "0"));
  Run(Click("#limit-form button:not([type])"));
  EXPECT_TRUE(
      p.WaitFor(ShowsText("#limit-error", "needs a rate or a concurrency")));
  EXPECT_EQ(api_->Get("/v1/topics/mail/limit").status, 404);

  Run(Type("#limit-form", "rate", "50") +
      Type("#limit-form", "period_ms", "60000") +
      Type("#limit-form", "burst", "5") +
      Type("#limit-form", "concurrency", "10"));
  Run(Click("#limit-form button:not([type])"));
  ASSERT_TRUE(p.WaitFor("document.querySelector('#limit-card').hidden"));
  HttpReply limit = api_->Get("/v1/topics/mail/limit");
  ASSERT_EQ(limit.status, 200) << limit.body;
  EXPECT_EQ(limit.json["rate"], 50);
  EXPECT_EQ(limit.json["period_ms"], 60000);
  EXPECT_EQ(limit.json["burst"], 5);
  EXPECT_EQ(limit.json["concurrency"], 10);
  EXPECT_TRUE(p.WaitFor(ShowsText("tr[data-topic=\"mail\"] .badge.limit",
                                  limit.json["text"].get<std::string>())));

  // The form shows the limit as stored; clearing it leaves a topic without
  // jobs nothing to be listed for.
  Run(Click("button[data-action=\"limit\"][data-topic=\"quiet\"]"));
  ASSERT_TRUE(
      p.WaitFor("document.querySelector('#limit-form').elements."
                "concurrency.value === '2' && "
                "!document.querySelector('#limit-clear').hidden"));
  Run(Click("#limit-clear"));
  ASSERT_TRUE(p.WaitFor("document.querySelector('#limit-card').hidden"));
  EXPECT_EQ(api_->Get("/v1/topics/quiet/limit").status, 404);
  EXPECT_TRUE(p.WaitFor("!document.querySelector('tr[data-topic=\"quiet\"]')"));
  EXPECT_EQ(api_->Get("/v1/topics/mail/limit").status, 200);
}

// A schedule added from the page (after two refusals), edited, deleted.
TEST_F(DashboardTest, AddsEditsAndDeletesASchedule) {
  ASSERT_NO_FATAL_FAILURE(OpenPage());
  ChromiumPage& p = *page_;
  EXPECT_TRUE(p.WaitFor(ShowsText("#no-schedules", "None")));
  Run(Click("#schedule-add"));
  ASSERT_TRUE(p.WaitFor("!document.querySelector('#schedule-card').hidden"));
  const std::string hostile = "<img src=x onerror=\"document.title='owned'\">";
  Run(Type("#schedule-form", "name", hostile) +
      Type("#schedule-form", "spec", "@every 1h") +
      Type("#schedule-form", "topic", "digests"));
  Run(Click("#schedule-form button"));
  EXPECT_TRUE(p.WaitFor(ShowsText("#schedule-error", "<img src=x")) &&
              p.WaitFor(ShowsText("#schedule-error", "has a character")));
  Run(Type("#schedule-form", "name", "digest.hourly") +
      Type("#schedule-form", "spec", "every hour"));
  Run(Click("#schedule-form button"));
  EXPECT_TRUE(p.WaitFor(ShowsText("#schedule-error", "spec 'every hour'")));
  EXPECT_EQ(api_->Get("/v1/schedules").json["schedules"].size(), 0u);

  Run(Type("#schedule-form", "spec", "@every 1h") +
      Type("#schedule-form", "time_zone", "Europe/Berlin") +
      Type("#schedule-form", "missed", "all:3") +
      Type("#schedule-form", "max_attempts", "5") +
      Type("#schedule-form", "jitter_ms", "1000") +
      Type("#schedule-form", "payload", "{\"kind\":\"digest\"}"));
  Run(Click("#schedule-form button"));
  ASSERT_TRUE(p.WaitFor("document.querySelector('#schedule-card').hidden"));
  HttpReply s = api_->Get("/v1/schedules/digest.hourly");
  ASSERT_EQ(s.status, 200) << s.body;
  EXPECT_EQ(s.json["spec"], "@every 1h");
  EXPECT_EQ(s.json["topic"], "digests");
  EXPECT_EQ(s.json["time_zone"], "Europe/Berlin");
  EXPECT_EQ(s.json["missed"], "all:3");
  EXPECT_EQ(s.json["max_attempts"], 5);
  EXPECT_EQ(s.json["jitter_ms"], 1000);
  EXPECT_EQ(s.json["payload"], "{\"kind\":\"digest\"}");
  EXPECT_TRUE(p.WaitFor(
      ShowsText("#schedules tr[data-schedule=\"digest.hourly\"]", "digests")));
  EXPECT_EQ(*p.Evaluate("document.title"), "delayq");

  // Edit: the form holds the schedule as stored, and what is not changed
  // stays.
  Run(
      Click("button[data-action=\"edit-schedule\"]"
            "[data-schedule=\"digest.hourly\"]"));
  ASSERT_TRUE(p.WaitFor(
      "(() => { const f = document.querySelector('#schedule-form')"
      ".elements; return f.name.readOnly && f.missed.value === "
      "'all:3' && f.payload.value === '{\"kind\":\"digest\"}'; })()"));
  Run(Type("#schedule-form", "spec", "30 * * * *"));
  Run(Click("#schedule-form button"));
  ASSERT_TRUE(p.WaitFor("document.querySelector('#schedule-card').hidden"));
  s = api_->Get("/v1/schedules/digest.hourly");
  EXPECT_EQ(s.json["spec"], "30 * * * *");
  EXPECT_EQ(s.json["missed"], "all:3");
  EXPECT_EQ(s.json["payload"], "{\"kind\":\"digest\"}");
  EXPECT_TRUE(p.WaitFor(ShowsText(
      "#schedules tr[data-schedule=\"digest.hourly\"]", "30 * * * *")));

  Run(
      Click("button[data-action=\"unschedule\"]"
            "[data-schedule=\"digest.hourly\"]"));
  EXPECT_TRUE(
      p.WaitFor("!document.querySelector('#schedules tr[data-schedule]') && "
                "!document.querySelector('#no-schedules').hidden"));
  EXPECT_EQ(api_->Get("/v1/schedules/digest.hourly").status, 404);
}

// Dead jobs retried, delayed ones run and jobs deleted by selection; a job
// that is gone by then is listed as failed with the server's reason.
TEST_F(DashboardTest, ActsOnSelectedJobsAndListsWhatFailed) {
  for (const char* id : {"d1", "d2", "d3", "d4"}) {
    ASSERT_NO_FATAL_FAILURE(AddDead("bulk", id));
  }
  for (const char* id : {"p1", "p2"}) {
    ASSERT_EQ(api_->Post("/v1/topics/bulk/jobs",
                         {{"payload", id}, {"id", id}, {"delay_ms", 3'600'000}})
                  .status,
              201);
  }
  ASSERT_NO_FATAL_FAILURE(OpenPage());
  ChromiumPage& p = *page_;
  ASSERT_TRUE(p.WaitFor(CellIs("bulk", "dead", 4)));
  Run(Click("tr[data-topic=\"bulk\"] td.dead a"));
  ASSERT_TRUE(p.WaitFor(absl::StrCat(kJobRows, " === 4")));
  EXPECT_TRUE(p.WaitFor("document.querySelector('#bulk-retry').disabled"));

  // All on the page, then not d4; d2 goes before the click.
  Run(Click("#select-all"));
  EXPECT_TRUE(p.WaitFor(ShowsText("#selected-count", "4 selected")));
  Run(Click("#jobs tr[data-id=\"d4\"] td.pick input"));
  EXPECT_TRUE(p.WaitFor(ShowsText("#selected-count", "3 selected") +
                        " && document.querySelector('#select-all')"
                        ".indeterminate"));
  ASSERT_EQ(api_->Delete("/v1/jobs/d2").status, 200);
  Run(Click("#bulk-retry"));
  ASSERT_TRUE(p.WaitFor(ShowsText("#bulk-summary", "retried 2 of 3 job(s)")));
  EXPECT_EQ(*p.Evaluate("Array.from(document.querySelectorAll("
                        "'#bulk-failures li'), (li) => li.textContent)"),
            Json::array({"d2: no job with id 'd2'"}));
  EXPECT_EQ(State("d1"), "ready");
  EXPECT_EQ(State("d3"), "ready");
  EXPECT_EQ(State("d4"), "dead");
  if (const char* out = std::getenv("TEST_UNDECLARED_OUTPUTS_DIR")) {
    Run("document.querySelector('#jobs-card').scrollIntoView(), true");
    absl::StatusOr<std::string> png = p.Screenshot();
    ASSERT_TRUE(png.ok()) << png.status();
    std::ofstream(absl::StrCat(out, "/dashboard-bulk.png"), std::ios::binary)
        << *png;
  }

  // Run the delayed ones now.
  Run(Click("#states button[data-state=\"delayed\"]"));
  ASSERT_TRUE(p.WaitFor(absl::StrCat(kJobRows, " === 2")));
  EXPECT_TRUE(p.WaitFor("document.querySelector('#bulk-summary').hidden"));
  Run(Click("#select-all"));
  Run(Click("#bulk-promote"));
  ASSERT_TRUE(p.WaitFor(ShowsText("#bulk-summary", "ran now 2 of 2 job(s)")));
  EXPECT_EQ(State("p1"), "ready");
  EXPECT_EQ(State("p2"), "ready");

  // Each action was one request, whatever the number of jobs.
  const std::string metrics = api_->Get("/metrics").body;
  for (const char* route : {"/v1/bulk/retry", "/v1/bulk/promote"}) {
    EXPECT_NE(
        metrics.find(absl::StrCat("delayq_http_requests_total{route=\"", route,
                                  "\",method=\"POST\",code=\"200\"} 1\n")),
        std::string::npos)
        << route << "\n"
        << metrics;
  }

  // Delete, with ids a page must not take for markup, and one ("..") a
  // browser cannot put in a URL (the ids go in the body); declined first.
  for (const char* id :
       {"<img src=x onerror=\"document.title='owned'\">", "__proto__", ".."}) {
    ASSERT_EQ(api_->Post("/v1/topics/bulk/jobs", {{"payload", "x"}, {"id", id}})
                  .status,
              201);
  }
  Run(Click("#states button[data-state=\"ready\"]"));
  ASSERT_TRUE(p.WaitFor(absl::StrCat(kJobRows, " === 7")));
  Run(Click("#select-all"));
  Run("window.confirm = () => false; true");
  Run(Click("#bulk-delete"));
  Run("window.confirm = () => true; true");
  EXPECT_EQ(api_->Get("/v1/topics/bulk/stats").json["ready"], 7);
  Run(Click("#bulk-delete"));
  ASSERT_TRUE(p.WaitFor(ShowsText("#bulk-summary", "deleted 7 of 7 job(s)")));
  EXPECT_EQ(api_->Get("/v1/topics/bulk/stats").json["ready"], 0);
  EXPECT_EQ(api_->Get("/v1/jobs/__proto__").status, 404);
  EXPECT_EQ(api_->Get("/v1/jobs/%2E%2E").status, 404);
  EXPECT_TRUE(p.WaitFor(absl::StrCat(kJobRows, " === 0")));
  EXPECT_EQ(*p.Evaluate("document.querySelectorAll('img').length"), 0);
  EXPECT_EQ(*p.Evaluate("document.title"), "delayq");
}

// The Workers card shows each live lease under its holder.
TEST_F(DashboardTest, WorkersShowsLeasesByHolder) {
  ASSERT_EQ(api_->Post("/v1/topics/wk/jobs", {{"payload", "x"}, {"id", "wk-1"}})
                .status,
            201);
  ASSERT_NO_FATAL_FAILURE(OpenPage());
  ChromiumPage& p = *page_;
  EXPECT_TRUE(p.WaitFor(ShowsText("#no-workers", "No job is reserved")));
  ASSERT_EQ(api_->Post("/v1/topics/wk/reserve", Json::object()).status, 200);
  // The page's refresh is off (OpenPage()): refresh it as its timer would.
  Run("refresh(), true");
  EXPECT_TRUE(p.WaitFor(
      "document.querySelector('#workers tbody tr[data-id=\"wk-1\"]') !== "
      "null"));
  EXPECT_TRUE(
      p.WaitFor(ShowsText("#workers-shown", "1 holder(s), 1 lease(s)")));
  EXPECT_TRUE(p.WaitFor("document.querySelector('#no-workers').hidden"));
  EXPECT_TRUE(p.WaitFor("document.querySelector('#workers-next').hidden"));

  // More leases than a page holds: "next page" follows the cursor.
  ASSERT_EQ(api_->Post("/v1/topics/wl/jobs/batch",
                       {{"payloads", std::vector<std::string>(250, "x")}})
                .status,
            201);
  ASSERT_EQ(api_->Post("/v1/topics/wl/reserve",
                       {{"max", 250}, {"worker", "batch-worker:1"}})
                .json["leases"]
                .size(),
            250u);
  Run("refresh(), true");
  EXPECT_TRUE(p.WaitFor(
      ShowsText("#workers-shown", "2 holder(s), 200 lease(s), page 1")));
  Run(Click("#workers-next"));
  EXPECT_TRUE(p.WaitFor(
      ShowsText("#workers-shown", "1 holder(s), 51 lease(s), page 2")));
  EXPECT_TRUE(p.WaitFor("document.querySelector('#workers-next').hidden"));
  Run(Click("#workers-previous"));
  EXPECT_TRUE(p.WaitFor(ShowsText("#workers-shown", "page 1")));
  EXPECT_TRUE(p.WaitFor("document.querySelector('#workers-previous').hidden"));
}

// A list shows a page at a time: "next page" follows the list's cursor,
// "previous page" goes back.
TEST_F(DashboardTest, PagesThroughMoreThanAHundredJobs) {
  ASSERT_EQ(api_->Post("/v1/topics/many/jobs/batch",
                       {{"payloads", std::vector<std::string>(250, "x")}})
                .status,
            201);
  ASSERT_NO_FATAL_FAILURE(OpenPage());
  ChromiumPage& p = *page_;
  ASSERT_TRUE(p.WaitFor(CellIs("many", "ready", 250)));
  Run(Click("tr[data-topic=\"many\"] td.ready a"));
  ASSERT_TRUE(p.WaitFor(absl::StrCat(kJobRows, " === 100")));
  EXPECT_TRUE(p.WaitFor(ShowsText("#jobs-shown", "showing 1 to 100 of 250")));
  EXPECT_TRUE(p.WaitFor("document.querySelector('#previous-page').hidden"));
  Run(Click("#next-page"));
  EXPECT_TRUE(p.WaitFor(ShowsText("#jobs-shown", "showing 101 to 200 of 250")));
  Run(Click("#next-page"));
  EXPECT_TRUE(p.WaitFor(absl::StrCat(kJobRows, " === 50")));
  EXPECT_TRUE(p.WaitFor(ShowsText("#jobs-shown", "showing 201 to 250 of 250")));
  EXPECT_TRUE(p.WaitFor("document.querySelector('#next-page').hidden"));
  Run(Click("#previous-page"));
  EXPECT_TRUE(p.WaitFor(ShowsText("#jobs-shown", "showing 101 to 200 of 250")));
  EXPECT_TRUE(p.WaitFor(absl::StrCat(kJobRows, " === 100")));
  // Another state starts again at its first page.
  Run(Click("#states button[data-state=\"delayed\"]"));
  EXPECT_TRUE(p.WaitFor(absl::StrCat(kJobRows, " === 0")));
  EXPECT_TRUE(p.WaitFor("document.querySelector('#previous-page').hidden"));
}

// Jobs that wait for others have a column and a tab of their own.
TEST_F(DashboardTest, ShowsJobsThatWaitForOthers) {
  ASSERT_EQ(api_->Post("/v1/flows", {{"jobs",
                                      {{{"topic", "site"},
                                        {"payload", "publish"},
                                        {"id", "publish"},
                                        {"after", {"render"}}},
                                       {{"topic", "site"},
                                        {"payload", "render"},
                                        {"id", "render"}}}}})
                .status,
            201);
  ASSERT_NO_FATAL_FAILURE(OpenPage());
  ChromiumPage& p = *page_;
  ASSERT_TRUE(p.WaitFor(CellIs("site", "waiting", 1)));
  EXPECT_TRUE(p.WaitFor(CellIs("site", "ready", 1)));
  Run(Click("tr[data-topic=\"site\"] td.waiting a"));
  ASSERT_TRUE(p.WaitFor(absl::StrCat(kJobRows, " === 1")));
  EXPECT_TRUE(p.WaitFor(
      ShowsText("#jobs tr[data-id=\"publish\"]", "waits for other jobs")));
  EXPECT_TRUE(p.WaitFor(
      ShowsText("#states button[data-state=\"waiting\"]", "waiting 1")));
}

// A job's card draws what it waits for as a tree, each job with its state
// (a dependency that left the store is "gone"); a batch's completion job
// shows the batch's progress.
TEST_F(DashboardTest, ShowsAFlowsTreeAndABatchsProgress) {
  auto job = [](const std::string& id, std::vector<std::string> after) {
    Json j = {{"topic", "site"}, {"payload", id}, {"id", id}};
    if (!after.empty()) j["after"] = after;
    return j;
  };
  // "publish" runs even if a job it waits for leaves: it stays waiting when
  // "render-b" is cancelled below, and its tree shows that one gone.
  Json publish = job("publish", {"render-a", "render-b"});
  publish["on_dependency_failure"] = "run";
  ASSERT_EQ(
      api_->Post("/v1/flows", {{"jobs",
                                {job("fetch", {}), job("render-a", {"fetch"}),
                                 job("render-b", {}), publish}}})
          .status,
      201);
  ASSERT_EQ(api_->Delete("/v1/jobs/render-b").status, 200);
  HttpReply opened =
      api_->Post("/v1/batches",
                 {{"topic", "report"}, {"payload", "send"}, {"id", "nightly"}});
  ASSERT_EQ(opened.status, 201) << opened.body;
  for (const char* id : {"import-1", "import-2"}) {
    ASSERT_EQ(api_->Post("/v1/topics/import/jobs",
                         {{"payload", id}, {"id", id}, {"batch", "nightly"}})
                  .status,
              201);
  }
  ASSERT_EQ(api_->Post("/v1/batches/nightly/close", Json::object()).status,
            200);
  ASSERT_EQ(api_->Delete("/v1/jobs/import-1").status, 200);

  ASSERT_NO_FATAL_FAILURE(OpenPage());
  ChromiumPage& p = *page_;
  Run("showJob('publish'), true");
  const std::string a = "#flow-tree li[data-id=\"render-a\"]";
  EXPECT_TRUE(p.WaitFor(ShowsText(a, "waiting")));
  EXPECT_TRUE(p.WaitFor(ShowsText(a + " li[data-id=\"fetch\"]", "ready")));
  EXPECT_TRUE(
      p.WaitFor(ShowsText("#flow-tree li[data-id=\"render-b\"]", "gone")));
  EXPECT_TRUE(p.WaitFor("document.querySelector('#job-batch').hidden"));

  // The flow goes from its last job down; "render-b" had left already.
  Run(Click("#cancel-flow"));
  EXPECT_TRUE(p.WaitFor("document.querySelector('#job-card').hidden"));
  for (const char* id : {"publish", "render-a", "fetch"}) {
    EXPECT_EQ(api_->Get(absl::StrCat("/v1/jobs/", id)).status, 404) << id;
  }

  Run("showJob('nightly'), true");
  EXPECT_TRUE(p.WaitFor(
      ShowsText("#batch-progress",
                "0 done, 0 dead, 1 cancelled, 1 pending of 2 (closed)")));
  EXPECT_TRUE(p.WaitFor("document.querySelector('#job-flow').hidden"));
}

}  // namespace
}  // namespace testing
}  // namespace delayq
