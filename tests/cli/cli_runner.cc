// Copyright delayq authors.

#include "tests/cli/cli_runner.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <regex>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/eventually.h"
#include "tests/testing/files.h"
#include "tests/testing/temp_path.h"

extern char** environ;

namespace delayq {
namespace testing {
namespace {

std::string Binary() {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  if (srcdir != nullptr)
    return absl::StrCat(srcdir, "/delayq/tools/delayq/delayq");
  return "tools/delayq/delayq";
}

}  // namespace

CliRunner::CliRunner() {
  dir_ = MakeTempDir("cli");
  store_ = absl::StrCat("sqlite:", dir_, "/jobs.db");
  env_["DELAYQ_STORE"] = store_;
}

CliProcess CliRunner::Spawn(const std::vector<std::string>& args,
                            const std::string& in_path) {
  CliProcess p;
  const int n = runs_++;
  p.out_path = absl::StrCat(dir_, "/run", n, ".out");
  p.err_path = absl::StrCat(dir_, "/run", n, ".err");
  const std::string binary = Binary();
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string var(*e);
    if (env_.count(var.substr(0, var.find('='))) == 0) {
      env_strings.push_back(var);
    }
  }
  for (const auto& [name, value] : env_) {
    env_strings.push_back(absl::StrCat(name, "=", value));
  }
  std::vector<char*> argv = {const_cast<char*>(binary.c_str())};
  for (const std::string& a : args)
    argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (const std::string& e : env_strings) {
    envp.push_back(const_cast<char*>(e.c_str()));
  }
  envp.push_back(nullptr);
  // Files, not pipes: a command a killed worker left behind cannot hold
  // them open and hang the test.
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, in_path.c_str(), O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, p.out_path.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, p.err_path.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  const int rc = posix_spawn(&p.pid, binary.c_str(), &actions, nullptr,
                             argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  EXPECT_EQ(rc, 0) << "cannot start " << binary;
  if (rc != 0) p.pid = -1;
  return p;
}

CliResult CliRunner::Run(const std::vector<std::string>& args,
                         absl::string_view input, absl::Duration limit) {
  const std::string in_path = absl::StrCat(dir_, "/run", runs_, ".in");
  WriteFile(in_path, input);
  return Wait(Spawn(args, in_path), limit);
}

CliProcess CliRunner::Start(const std::vector<std::string>& args) {
  return Spawn(args, "/dev/null");
}

CliResult CliRunner::Wait(const CliProcess& process, absl::Duration limit) {
  CliResult result;
  if (process.pid < 0) return result;
  const absl::Time give_up = absl::Now() + limit;
  int status = 0;
  while (waitpid(process.pid, &status, WNOHANG) == 0) {
    if (absl::Now() > give_up) {
      ADD_FAILURE() << "delayq still running after " << limit << "; killed";
      kill(process.pid, SIGKILL);
      waitpid(process.pid, &status, 0);
      break;
    }
    absl::SleepFor(absl::Milliseconds(5));
  }
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.signal = WTERMSIG(status);
  result.out = ReadFile(process.out_path);
  result.err = ReadFile(process.err_path);
  return result;
}

bool CliRunner::WaitForFile(const std::string& path, absl::Duration limit) {
  return testing::Eventually(
      limit,
      [&path] {
        struct stat st;
        return stat(path.c_str(), &st) == 0;
      },
      absl::Milliseconds(10));
}

std::string CliRunner::ReadFile(const std::string& path) {
  return testing::ReadFile(path);
}

bool CliRunner::NoJobsIn(const std::string& stats_json) {
  static const std::regex* const some_jobs =
      new std::regex("\"(delayed|ready|reserved|dead)\":[1-9]");
  return absl::StartsWith(stats_json, "[") &&
         !std::regex_search(stats_json, *some_jobs);
}

void ExpectFailure(const CliResult& r, absl::string_view what) {
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_THAT(r.err, ::testing::StartsWith("delayq: "));
  EXPECT_THAT(r.err, ::testing::HasSubstr(std::string(what)));
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_EQ(r.out, "");
}

}  // namespace testing
}  // namespace delayq
