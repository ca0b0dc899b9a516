// Copyright delayq authors.
//
// Starts tests/redis/redis_scheduler_worker as a child process and reads what
// it recorded. The child's stdin is a pipe: closing it (Finish()) asks the
// child to stop its scheduler and exit. A WorkerProcess that is destroyed
// while its child still runs kills it, so a failing test leaves nothing
// behind.

#ifndef DELAYQ_TESTS_REDIS_WORKER_PROCESS_H_
#define DELAYQ_TESTS_REDIS_WORKER_PROCESS_H_

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace delayq {
namespace testing {

// One line a worker recorded: "done" or "begin", the job id, its attempts
// when handled, and the worker's pid.
struct WorkerRecord {
  std::string event;
  std::string id;
  int attempts = 0;
  std::string pid;
};

// Where a test writes its worker's files.
inline std::string TestTmpDir() {
  const char* tmp = getenv("TEST_TMPDIR");
  return tmp != nullptr ? tmp : "/tmp";
}

class WorkerProcess {
 public:
  // Starts the worker on store `url`, writing to `out_file`, with
  // `key=value` arguments. pid() is -1 if fork or pipe failed.
  WorkerProcess(const std::string& url, std::string out_file,
                const std::vector<std::string>& args)
      : out_file_(std::move(out_file)) {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) return;
    std::vector<std::string> all = {"tests/redis/redis_scheduler_worker", url,
                                    out_file_};
    all.insert(all.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (std::string& a : all) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_ = fork();
    if (pid_ == 0) {
      dup2(fds[0], STDIN_FILENO);  // the copy does not close on exec
      execv(argv[0], argv.data());
      _exit(127);
    }
    close(fds[0]);
    stdin_ = fds[1];
  }

  ~WorkerProcess() {
    if (stdin_ >= 0) close(stdin_);
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }

  WorkerProcess(const WorkerProcess&) = delete;
  WorkerProcess& operator=(const WorkerProcess&) = delete;

  pid_t pid() const { return pid_; }
  const std::string& out_file() const { return out_file_; }

  // Closes the child's stdin and waits for it to exit. Returns its wait
  // status.
  int Finish() {
    if (stdin_ >= 0) close(stdin_);
    stdin_ = -1;
    return Wait();
  }

  // Waits for the child to exit on its own. Returns its wait status.
  int Wait() {
    int status = -1;
    if (pid_ > 0 && waitpid(pid_, &status, 0) == pid_) pid_ = -1;
    return status;
  }

  // SIGKILL: the child dies wherever it is.
  void Kill() {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

  // Every complete line the child has recorded so far.
  std::vector<WorkerRecord> Records() const {
    std::vector<WorkerRecord> out;
    std::ifstream in(out_file_);
    std::string line;
    while (std::getline(in, line)) {
      if (in.eof()) break;  // a line still being written has no newline
      std::vector<std::string> f = absl::StrSplit(line, ' ');
      if (f.size() != 4) continue;
      WorkerRecord r{f[0], f[1], 0, f[3]};
      r.attempts = atoi(f[2].c_str());
      out.push_back(std::move(r));
    }
    return out;
  }

 private:
  std::string out_file_;
  pid_t pid_ = -1;
  int stdin_ = -1;
};

// The file a test's worker `name` writes to.
inline std::string WorkerFile(const std::string& name) {
  return absl::StrCat(TestTmpDir(), "/", name, "-", getpid(), ".txt");
}

// The ids PREFIX-g-k the worker's enqueue=PREFIX:GROUPS:... creates.
inline std::vector<std::string> GroupIds(const std::string& prefix,
                                         int groups) {
  std::vector<std::string> ids;
  for (int g = 0; g < groups; ++g) {
    for (int k = 0; k < 10; ++k)
      ids.push_back(absl::StrCat(prefix, "-", g, "-", k));
  }
  return ids;
}

}  // namespace testing
}  // namespace delayq

#endif  // DELAYQ_TESTS_REDIS_WORKER_PROCESS_H_
