// Copyright delayq authors.

#include "tests/testing/worker_process.h"

#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"

namespace delayq {
namespace testing {
namespace {

// The worker binary in the test's runfiles.
std::string WorkerBinary() {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const char* workspace = std::getenv("TEST_WORKSPACE");
  if (srcdir == nullptr || workspace == nullptr) return "tests/testing/worker";
  return absl::StrCat(srcdir, "/", workspace, "/tests/testing/worker");
}

}  // namespace

WorkerProcess::WorkerProcess(const std::vector<std::string>& argv)
    : child_(argv), pid_(child_.pid()) {}

std::unique_ptr<WorkerProcess> WorkerProcess::Start(
    const std::string& url, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {WorkerBinary(), url};
  argv.insert(argv.end(), args.begin(), args.end());
  std::unique_ptr<WorkerProcess> worker(new WorkerProcess(argv));
  if (!worker->child_.started()) return nullptr;
  // Opening a store can take a while on a machine busy with other tests.
  if (!worker->NextStartingWith("ready ", absl::Seconds(60))) return nullptr;
  return worker;
}

bool WorkerProcess::Send(const std::string& command) {
  return child_.WriteLine(command);
}

absl::Status WorkerProcess::Run(const std::string& command,
                                absl::Duration patience) {
  if (!Send(command)) {
    return absl::UnavailableError(absl::StrCat("worker gone before ", command));
  }
  const std::string name = command.substr(0, command.find(' '));
  const absl::Time give_up = absl::Now() + patience;
  for (;;) {
    std::optional<std::string> line = Next(give_up - absl::Now());
    if (!line) {
      return absl::DeadlineExceededError(
          absl::StrCat("no answer to '", command, "'"));
    }
    if (*line == "ok " + name) return absl::OkStatus();
    if (absl::StartsWith(*line, "error ")) {
      return absl::InternalError(absl::StrCat(command, ": ", *line));
    }
  }
}

std::optional<std::string> WorkerProcess::Next(absl::Duration patience) {
  std::optional<std::string> line = child_.ReadLine(patience);
  if (line) lines_.push_back(*line);
  return line;
}

std::optional<std::string> WorkerProcess::NextStartingWith(
    const std::string& prefix, absl::Duration patience) {
  const absl::Time give_up = absl::Now() + patience;
  for (;;) {
    std::optional<std::string> line = Next(give_up - absl::Now());
    if (!line || absl::StartsWith(*line, prefix)) return line;
  }
}

int WorkerProcess::Collect(absl::Duration patience) {
  const absl::Time give_up = absl::Now() + patience;
  int n = 0;
  while (Next(std::min(give_up - absl::Now(), absl::Milliseconds(2)))) ++n;
  return n;
}

void WorkerProcess::ReadFor(absl::Duration period) {
  const absl::Time end = absl::Now() + period;
  while (absl::Now() < end) Next(end - absl::Now());
}

void WorkerProcess::ReadToEnd() {
  while (Next(absl::Seconds(30))) {
  }
}

int WorkerProcess::Finish() {
  child_.CloseInput();
  // Read while it ends: a worker stuck on a full pipe would never exit.
  ReadToEnd();
  return child_.Wait();
}

int WorkerProcess::Wait() {
  ReadToEnd();
  return child_.Wait();
}

int WorkerProcess::Kill() { return child_.Kill(); }

bool ExitedCleanly(int wait_status) {
  return WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0;
}

std::optional<Delivery> ParseDelivery(const std::string& line) {
  std::vector<std::string> f = absl::StrSplit(line, ' ');
  Delivery d;
  const bool got =
      f.size() == 4 && f[0] == "got" && absl::SimpleAtoi(f[3], &d.micros);
  const bool begin = f.size() == 3 && f[0] == "begin";
  if (!(got || begin) || !absl::SimpleAtoi(f[2], &d.attempts)) {
    return std::nullopt;
  }
  d.event = f[0];
  d.id = f[1];
  return d;
}

std::vector<Delivery> Deliveries(const std::vector<std::string>& lines) {
  std::vector<Delivery> out;
  for (const std::string& line : lines) {
    if (std::optional<Delivery> d = ParseDelivery(line)) out.push_back(*d);
  }
  return out;
}

std::vector<std::string> GroupIds(const std::string& prefix, int groups) {
  std::vector<std::string> ids;
  for (int g = 0; g < groups; ++g) {
    for (int k = 0; k < 10; ++k) {
      ids.push_back(absl::StrCat(prefix, "-", g, "-", k));
    }
  }
  return ids;
}

}  // namespace testing
}  // namespace delayq
