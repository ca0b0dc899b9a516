// Copyright delayq authors.
//
// What the store counts and logs, as the server shows it: a job added over
// HTTP and worked by `delayq work` in another process (one failure, then
// success) appears in GET /v1/counts, /metrics and the job's history, which
// read the store's counts and event log, not what this server did itself.

#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "tests/serve/api_suite.h"
#include "tests/testing/eventually.h"
#include "tests/testing/files.h"

namespace delayq {
namespace testing {
namespace {

using ::testing::HasSubstr;

// Runs `delayq work TOPIC --once` on `store_url` in a process of its own:
// the job's command fails on its first attempt and succeeds on its second.
// Returns its exit code.
int WorkOnceElsewhere(const std::string& store_url, const std::string& topic) {
  const std::string command = absl::StrCat(
      DelayqBinary(), " work ", topic, " --store '", store_url,
      "' --once --poll 50ms -- sh -c '[ \"$DELAYQ_ATTEMPT\" -ge 2 ]'");
  const int status = std::system(command.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST_P(ApiTest, WorkDoneByAnotherProcessShowsInTheCountsAndMetrics) {
  Add("elsewhere",
      {{"payload", "p"}, {"max_attempts", 2}, {"backoff", "fixed:100ms"}});
  ASSERT_EQ(WorkOnceElsewhere(store_url_, "elsewhere"), 0);

  HttpReply counts = api_->Get("/v1/counts?minutes=5&topic=elsewhere");
  ASSERT_EQ(counts.status, 200) << counts.body;
  int64_t enqueued = 0, done = 0, failed = 0, retried = 0, delivered = 0;
  for (const Json& m : counts.json["minutes"]) {
    EXPECT_EQ(m["topic"], "elsewhere");
    enqueued += m["enqueued"].get<int64_t>();
    done += m["done"].get<int64_t>();
    failed += m["failed"].get<int64_t>();
    retried += m["retried"].get<int64_t>();
    for (const Json& n : m["lateness"]) delivered += n.get<int64_t>();
  }
  EXPECT_EQ(enqueued, 1) << counts.body;
  EXPECT_EQ(delivered, 2) << counts.body;
  EXPECT_EQ(failed, 1) << counts.body;
  EXPECT_EQ(retried, 1) << counts.body;
  EXPECT_EQ(done, 1) << counts.body;

  // The topic has no job left, and is still shown: it worked this hour.
  HttpReply metrics = api_->Get("/metrics");
  ASSERT_EQ(metrics.status, 200);
  for (const char* line :
       {"delayq_store_transitions_total{topic=\"elsewhere\",transition="
        "\"enqueued\"} 1\n",
        "delayq_store_transitions_total{topic=\"elsewhere\",transition="
        "\"done\"} 1\n",
        "delayq_store_transitions_total{topic=\"elsewhere\",transition="
        "\"failed\"} 1\n"}) {
    EXPECT_THAT(metrics.body, HasSubstr(line));
  }
  // This server only added the job: its own events say no more.
  EXPECT_THAT(metrics.body, ::testing::Not(HasSubstr(
                                "delayq_job_events_total{topic=\"elsewhere\","
                                "event=\"succeeded\"}")));
}

TEST_P(ApiTest, WorkDoneByAnotherProcessShowsInTheJobsHistory) {
  const std::string id =
      Add("logged",
          {{"payload", "p"}, {"max_attempts", 2}, {"backoff", "fixed:100ms"}});
  ASSERT_EQ(WorkOnceElsewhere(store_url_, "logged"), 0);

  // The worker wrote its events before it exited; the server writes its own
  // just after its calls, so its enqueue may take a moment.
  Json events;
  std::vector<std::string> seen;
  Eventually(absl::Seconds(10), [&] {
    HttpReply history = api_->Get(absl::StrCat("/v1/jobs/", id, "/history"));
    EXPECT_EQ(history.status, 200) << history.body;
    events = history.json["events"];
    seen.clear();
    for (const Json& e : events) seen.push_back(e["event"]);
    return seen.size() >= 6;
  });
  // The worker's own promotion of the retry may or may not beat its reserve
  // to it; everything else is in order.
  seen.erase(std::remove(seen.begin(), seen.end(), "promoted"), seen.end());
  EXPECT_THAT(seen, ::testing::ElementsAre("enqueued", "reserved", "failed",
                                           "retried", "reserved", "succeeded"))
      << events.dump();
  std::set<std::string> who;
  for (const Json& e : events) who.insert(e["who"].get<std::string>());
  // Two processes: the server's enqueue, the worker's reservations.
  EXPECT_EQ(who.size(), 2u) << events.dump();
  EXPECT_EQ(events[0]["attempts"], 0);
}

// The metric names a file names (delayq_...), each once.
std::set<std::string> MetricNames(const std::string& path) {
  static const std::regex* const name = new std::regex("delayq_[a-z_]+");
  const std::string text = ReadFile(path);
  EXPECT_FALSE(text.empty()) << path;
  std::set<std::string> names;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), *name);
       it != std::sregex_iterator(); ++it) {
    names.insert(it->str());
  }
  return names;
}

TEST_P(ApiTest, EveryMetricTheShippedDashboardAndAlertsNameIsExported) {
  const std::string metrics = api_->Get("/metrics").body;
  for (const char* file :
       {"docs/grafana/delayq.json", "docs/prometheus/alerts.yml"}) {
    for (std::string name : MetricNames(file)) {
      // A histogram's series are named after it.
      for (const char* suffix : {"_bucket", "_sum", "_count"}) {
        if (absl::EndsWith(name, suffix) &&
            metrics.find(absl::StrCat("# TYPE ", name, " ")) ==
                std::string::npos) {
          name.resize(name.size() - strlen(suffix));
        }
      }
      EXPECT_THAT(metrics, HasSubstr(absl::StrCat("# TYPE ", name, " ")))
          << file << " names " << name;
    }
  }
}

TEST_P(ApiTest, CountsRefuseABadSpan) {
  for (const char* bad : {"0", "-1", "x", "100000"}) {
    HttpReply r = api_->Get(absl::StrCat("/v1/counts?minutes=", bad));
    EXPECT_EQ(r.status, 400) << bad << ": " << r.body;
    EXPECT_THAT(r.body, HasSubstr("minutes must be a whole number"));
  }
}

}  // namespace
}  // namespace testing
}  // namespace delayq
