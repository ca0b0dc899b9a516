// Copyright delayq authors.
//
// Reading what sqlite_worker processes reported, and starting them.

#ifndef DELAYQ_TESTS_SQLITE_WORKER_LOG_H_
#define DELAYQ_TESTS_SQLITE_WORKER_LOG_H_

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"

namespace delayq {
namespace testing {

struct WorkerLog {
  struct Reservation {
    std::string id;
    uint64_t token;
    int64_t now_us;
    int64_t deadline_us;
  };
  struct AckRecord {
    std::string id;
    uint64_t token;
    int code;
  };
  std::vector<std::string> produced;
  std::vector<Reservation> reserved;
  std::vector<AckRecord> acked;
  // Ack() was called but its return is not reported.
  std::vector<std::string> acking;
};

// Appends the records of file `path` to `log`. A last line without its
// newline (none should exist: each is one write) is ignored.
inline void ReadWorkerLog(const std::string& path, WorkerLog* log) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (in.eof()) break;  // no trailing newline: incomplete
    std::istringstream fields(line);
    std::string kind;
    fields >> kind;
    if (kind == "P") {
      std::string id;
      fields >> id;
      log->produced.push_back(id);
    } else if (kind == "R") {
      WorkerLog::Reservation r;
      fields >> r.id >> r.token >> r.now_us >> r.deadline_us;
      log->reserved.push_back(r);
    } else if (kind == "I") {
      std::string id;
      fields >> id;
      log->acking.push_back(id);
    } else if (kind == "A") {
      WorkerLog::AckRecord a;
      fields >> a.id >> a.token >> a.code;
      log->acked.push_back(a);
    }
  }
}

// The helper binary, from the test's runfiles.
inline std::string WorkerPath() {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const char* workspace = std::getenv("TEST_WORKSPACE");
  return absl::StrCat(srcdir ? srcdir : ".", "/",
                      workspace ? workspace : "delayq",
                      "/tests/sqlite/sqlite_worker");
}

// Starts the helper with `args`; its stdout goes to `stdout_path` when not
// empty. Returns the child's pid (fork + exec: the child opens its own
// connections).
inline pid_t SpawnWorker(const std::vector<std::string>& args,
                         const std::string& stdout_path = "") {
  const std::string binary = WorkerPath();
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(binary.c_str()));
  for (const std::string& a : args)
    argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    if (!stdout_path.empty()) {
      const int fd =
          open(stdout_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd < 0 || dup2(fd, STDOUT_FILENO) < 0) _exit(126);
      close(fd);
    }
    execv(binary.c_str(), argv.data());
    _exit(127);
  }
  return pid;
}

// Waits for `pid`; returns its exit code, or 128 + signal.
inline int WaitWorker(pid_t pid) {
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return -1;
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

}  // namespace testing
}  // namespace delayq

#endif  // DELAYQ_TESTS_SQLITE_WORKER_LOG_H_
