// Copyright delayq authors.
//
// Several processes, each with several threads, reserve and acknowledge the
// same topics of one store: every job is delivered exactly once (leases are
// long, so none expires and none may be handed out twice), and the store
// ends empty.

#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "delayq/redis_backend.h"
#include "gtest/gtest.h"
#include "tests/redis/redis_test_server.h"
#include "tests/testing/status_matchers.h"

namespace delayq {
namespace {

constexpr int kProcesses = 3;
constexpr int kThreadsPerProcess = 4;
constexpr int kJobsPerTopic = 1000;
const char* const kTopics[] = {"alpha", "beta", "gamma"};

TEST(RedisMultiProcessTest, EveryJobDeliveredExactlyOnceAcrossProcesses) {
  RedisOptions options = testing::FreshRedisOptions();
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Backend> backend,
                       OpenRedisBackend(options));
  const absl::Time now = absl::Now();
  for (const char* topic : kTopics) {
    std::vector<NewJob> batch;
    for (int i = 0; i < kJobsPerTopic; ++i) {
      NewJob j;
      j.id = absl::StrCat(topic, "-", i);
      j.topic = topic;
      j.payload = "x";
      j.ttr = absl::Minutes(10);  // no lease expires during the test
      j.run_at = now;
      batch.push_back(std::move(j));
    }
    ASSERT_OK(backend->Add(batch, now));
  }

  const char* tmp = getenv("TEST_TMPDIR");
  const std::string dir = tmp != nullptr ? tmp : "/tmp";
  std::vector<pid_t> pids;
  std::vector<std::string> outputs;
  for (int p = 0; p < kProcesses; ++p) {
    outputs.push_back(absl::StrCat(dir, "/worker-", getpid(), "-", p, ".txt"));
    std::vector<std::string> args = {"tests/redis/redis_worker",
                                     absl::StrCat(options.port),
                                     options.ns,
                                     "alpha,beta,gamma",
                                     absl::StrCat(kThreadsPerProcess),
                                     outputs.back()};
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      execv(argv[0], argv.data());
      _exit(127);
    }
    pids.push_back(pid);
  }
  for (pid_t pid : pids) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "worker status " << status;
  }

  std::map<std::string, int> deliveries;
  std::vector<int> per_process;
  for (const std::string& path : outputs) {
    std::ifstream in(path);
    std::string id;
    int n = 0;
    while (std::getline(in, id)) {
      deliveries[id]++;
      ++n;
    }
    per_process.push_back(n);
  }
  EXPECT_EQ(deliveries.size(), 3u * kJobsPerTopic) << "jobs lost";
  int duplicated = 0;
  for (const auto& [id, n] : deliveries) duplicated += n > 1 ? 1 : 0;
  EXPECT_EQ(duplicated, 0);
  // How the work spread depends on scheduling; recorded, not asserted.
  for (int p = 0; p < kProcesses; ++p) {
    ::testing::Test::RecordProperty(absl::StrCat("process_", p, "_jobs"),
                                    per_process[p]);
  }
  for (const char* topic : kTopics) {
    ASSERT_OK_AND_ASSIGN(TopicStats stats, backend->Stats(topic));
    EXPECT_EQ(stats, TopicStats{}) << topic;
  }
}

}  // namespace
}  // namespace delayq
