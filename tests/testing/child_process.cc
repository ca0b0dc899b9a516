// Copyright delayq authors.

#include "tests/testing/child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include "absl/time/clock.h"

namespace delayq {
namespace testing {

ChildProcess::ChildProcess(const std::vector<std::string>& argv) {
  // A child that died must make WriteLine() fail, not kill this process.
  signal(SIGPIPE, SIG_IGN);
  int in[2], out[2];
  if (pipe2(in, O_CLOEXEC) != 0) return;
  if (pipe2(out, O_CLOEXEC) != 0) {
    close(in[0]);
    close(in[1]);
    return;
  }
  std::vector<std::string> args = argv;
  std::vector<char*> c_args;
  for (std::string& a : args) c_args.push_back(a.data());
  c_args.push_back(nullptr);
  const pid_t parent = getpid();
  pid_ = fork();
  if (pid_ == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);  // the test died before prctl
    signal(SIGPIPE, SIG_DFL);             // an ignored signal survives exec
    // dup2 copies do not close on exec.
    dup2(in[0], STDIN_FILENO);
    dup2(out[1], STDOUT_FILENO);
    execv(c_args[0], c_args.data());
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  if (pid_ < 0) {
    close(in[1]);
    close(out[0]);
    return;
  }
  stdin_ = in[1];
  stdout_ = out[0];
}

ChildProcess::~ChildProcess() {
  Kill();
  if (stdin_ >= 0) close(stdin_);
  if (stdout_ >= 0) close(stdout_);
}

std::optional<std::string> ChildProcess::ReadLine(absl::Duration patience) {
  const absl::Time give_up = absl::Now() + patience;
  for (;;) {
    const size_t newline = buffered_.find('\n');
    if (newline != std::string::npos) {
      std::string line = buffered_.substr(0, newline);
      buffered_.erase(0, newline + 1);
      return line;
    }
    if (stdout_ < 0) return std::nullopt;
    const absl::Duration left = give_up - absl::Now();
    if (left <= absl::ZeroDuration()) return std::nullopt;
    pollfd p{stdout_, POLLIN, 0};
    const int ready = poll(&p, 1, absl::ToInt64Milliseconds(left) + 1);
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return std::nullopt;
    char chunk[4096];
    const ssize_t n = read(stdout_, chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      close(stdout_);
      stdout_ = -1;
      continue;
    }
    buffered_.append(chunk, static_cast<size_t>(n));
  }
}

std::optional<std::string> ChildProcess::ReadLineStartingWith(
    const std::string& prefix, absl::Duration patience) {
  const absl::Time give_up = absl::Now() + patience;
  for (;;) {
    std::optional<std::string> line = ReadLine(give_up - absl::Now());
    if (!line || line->rfind(prefix, 0) == 0) return line;
  }
}

bool ChildProcess::WriteLine(const std::string& line) {
  if (stdin_ < 0) return false;
  const std::string data = line + "\n";
  return write(stdin_, data.data(), data.size()) ==
         static_cast<ssize_t>(data.size());
}

void ChildProcess::CloseInput() {
  if (stdin_ >= 0) close(stdin_);
  stdin_ = -1;
}

int ChildProcess::Finish() {
  CloseInput();
  return Wait();
}

int ChildProcess::Wait() {
  int status = -1;
  if (pid_ > 0 && waitpid(pid_, &status, 0) == pid_) pid_ = -1;
  return status;
}

int ChildProcess::Kill() {
  if (pid_ <= 0) return -1;
  kill(pid_, SIGKILL);
  int status = -1;
  waitpid(pid_, &status, 0);
  pid_ = -1;
  return status;
}

}  // namespace testing
}  // namespace delayq
