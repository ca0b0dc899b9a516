// Copyright delayq authors.

#include "tests/multiprocess/multiprocess_suite.h"

#include <algorithm>
#include <utility>

#include "absl/time/clock.h"
#include "delayq/open.h"

namespace delayq {
namespace testing {

std::string SharedStoreName(const ::testing::TestParamInfo<SharedStore>& info) {
  return info.param.name;
}

void MultiProcessTest::SetUp() { url_ = GetParam().fresh_url(); }

std::unique_ptr<WorkerProcess> MultiProcessTest::StartWorker(
    const std::vector<std::string>& args) {
  std::unique_ptr<WorkerProcess> worker = WorkerProcess::Start(url_, args);
  EXPECT_NE(worker, nullptr) << "the worker did not start on " << url_;
  return worker;
}

std::unique_ptr<Backend> MultiProcessTest::OpenStore() {
  absl::StatusOr<std::unique_ptr<Backend>> store = OpenBackend(url_);
  EXPECT_TRUE(store.ok()) << store.status();
  return store.ok() ? *std::move(store) : nullptr;
}

std::unique_ptr<Scheduler> MultiProcessTest::OpenScheduler() {
  std::unique_ptr<Backend> store = OpenStore();
  if (store == nullptr) return nullptr;
  SchedulerOptions options;
  options.poll_interval = absl::Hours(1);
  options.news_poll_interval = absl::Hours(1);
  auto scheduler = Scheduler::Create(std::move(store), options);
  EXPECT_TRUE(scheduler.ok()) << scheduler.status();
  return scheduler.ok() ? *std::move(scheduler) : nullptr;
}

bool CollectUntil(const std::vector<WorkerProcess*>& workers,
                  const std::function<bool()>& done, absl::Duration limit) {
  const absl::Time give_up = absl::Now() + limit;
  while (!done()) {
    if (absl::Now() > give_up) return false;
    int read = 0;
    for (WorkerProcess* w : workers) read += w->Collect(absl::Milliseconds(20));
    // Workers that are all gone say nothing more; do not spin on them.
    if (read == 0) absl::SleepFor(absl::Milliseconds(5));
  }
  return true;
}

bool AllSaid(const std::vector<WorkerProcess*>& workers,
             const std::string& line) {
  bool all = true;
  for (const WorkerProcess* w : workers) {
    if (!Errors(*w).empty()) return true;
    all = all && Count(*w, line) > 0;
  }
  return all;
}

std::vector<std::string> Errors(const WorkerProcess& worker) {
  std::vector<std::string> errors;
  for (const std::string& line : worker.lines()) {
    if (line.rfind("error ", 0) == 0) errors.push_back(line);
  }
  return errors;
}

int Count(const WorkerProcess& worker, const std::string& line) {
  return static_cast<int>(
      std::count(worker.lines().begin(), worker.lines().end(), line));
}

}  // namespace testing
}  // namespace delayq
