// Copyright delayq authors.
//
// Runs the built `delayq` program the way a user does: arguments, stdin,
// environment in; exit status, stdout and stderr out. Each test gets its own
// SQLite file, passed as DELAYQ_STORE.

#ifndef DELAYQ_TESTS_CLI_CLI_RUNNER_H_
#define DELAYQ_TESTS_CLI_CLI_RUNNER_H_

#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace delayq {
namespace testing {

struct CliResult {
  int exit_code = -1;  // -1 when killed by a signal
  int signal = 0;
  std::string out;
  std::string err;
};

// A running `delayq` started by CliRunner::Start().
struct CliProcess {
  pid_t pid = -1;
  std::string out_path;
  std::string err_path;
};

class CliRunner {
 public:
  // A fresh scratch directory and store for this test.
  CliRunner();

  // The scratch directory (for marker files) and the store's URL.
  const std::string& dir() const { return dir_; }
  const std::string& store() const { return store_; }

  // Extra environment for every later run.
  void SetEnv(const std::string& name, const std::string& value) {
    env_[name] = value;
  }

  // Runs delayq with `args` and `input` on stdin and waits for it (killing
  // it and failing the test after `limit`).
  CliResult Run(const std::vector<std::string>& args,
                absl::string_view input = "",
                absl::Duration limit = absl::Seconds(30));

  // Starts delayq in the background.
  CliProcess Start(const std::vector<std::string>& args);

  // Waits for a started process (up to `limit`, then kills it).
  CliResult Wait(const CliProcess& process,
                 absl::Duration limit = absl::Seconds(30));

  // Polls for `path` to exist, up to `limit`.
  static bool WaitForFile(const std::string& path,
                          absl::Duration limit = absl::Seconds(15));

  static std::string ReadFile(const std::string& path);

  // Whether `stats --json` output lists no job in any state (the topics
  // worked lately are listed, with zeros).
  static bool NoJobsIn(const std::string& stats_json);

 private:
  CliProcess Spawn(const std::vector<std::string>& args,
                   const std::string& in_path);

  std::string dir_;
  std::string store_;
  std::map<std::string, std::string> env_;
  int runs_ = 0;
};

// ExpectFailure()
//
// Checks the program's answer to a failing command: exit 1, nothing on
// stdout, and exactly one line on stderr, "delayq: ..." containing `what`.
void ExpectFailure(const CliResult& r, absl::string_view what);

}  // namespace testing
}  // namespace delayq

#endif  // DELAYQ_TESTS_CLI_CLI_RUNNER_H_
