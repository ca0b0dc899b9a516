// Copyright delayq authors.

#include "tools/delayq/group_guard.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace delayq {
namespace cli {
namespace {

// The most groups watched at once: `delayq work -j` allows 1024 commands.
constexpr int kMaxGroups = 4096;

// The guard's life, in the forked child: only plain system calls, as after
// a fork of a threaded process. Each message is one int32: a group to watch
// (> 0) or to forget (< 0). Writes of 4 bytes to a pipe are atomic, so
// threads of the worker may write at once.
[[noreturn]] void GuardMain(int in) {
#ifdef __linux__
  prctl(PR_SET_NAME, "delayq-guard");
#endif
  // Only the end of the pipe ends the guard: not the Ctrl-C or SIGTERM sent
  // to the worker's whole process group, which the worker answers by
  // finishing its running commands first.
  struct sigaction ignore;
  std::memset(&ignore, 0, sizeof(ignore));
  ignore.sa_handler = SIG_IGN;
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE}) {
    sigaction(sig, &ignore, nullptr);
  }
  // Nothing of the worker's stays open here: not the pipe's write end (or
  // the pipe would never end), not the store's sockets, not the terminal.
  dup2(in, 3);
  const int null = open("/dev/null", O_RDWR);
  for (int fd = 0; fd < 3; ++fd) dup2(null, fd);
#ifdef SYS_close_range
  syscall(SYS_close_range, 4, ~0U, 0);
#else
  for (int fd = 4; fd < 65536; ++fd) close(fd);
#endif

  static pid_t groups[kMaxGroups];
  int count = 0;
  int32_t message[256];
  for (;;) {
    const ssize_t n = read(3, message, sizeof(message));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    for (ssize_t i = 0; i < n / static_cast<ssize_t>(sizeof(int32_t)); ++i) {
      const int32_t m = message[i];
      if (m > 0 && count < kMaxGroups) {
        groups[count++] = m;
      } else if (m < 0) {
        for (int j = 0; j < count; ++j) {
          if (groups[j] == -m) {
            groups[j] = groups[--count];
            break;
          }
        }
      }
    }
  }
  for (int j = 0; j < count; ++j) kill(-groups[j], SIGKILL);
  _exit(0);
}

}  // namespace

absl::StatusOr<std::unique_ptr<GroupGuard>> GroupGuard::Start() {
  int fds[2];
  // O_CLOEXEC: no command inherits the write end, or the pipe would outlive
  // the worker.
  if (pipe2(fds, O_CLOEXEC) != 0) {
    return absl::ResourceExhaustedError(
        absl::StrCat("pipe: ", std::strerror(errno)));
  }
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return absl::ResourceExhaustedError(
        absl::StrCat("fork: ", std::strerror(errno)));
  }
  if (pid == 0) GuardMain(fds[0]);
  close(fds[0]);
  return std::unique_ptr<GroupGuard>(new GroupGuard(fds[1], pid));
}

GroupGuard::~GroupGuard() {
  close(fd_);
  int status;
  while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
}

void GroupGuard::Watch(pid_t group) {
  const int32_t m = static_cast<int32_t>(group);
  // A guard that is gone cannot be helped; the command runs regardless.
  (void)!write(fd_, &m, sizeof(m));
}

void GroupGuard::Forget(pid_t group) {
  const int32_t m = -static_cast<int32_t>(group);
  (void)!write(fd_, &m, sizeof(m));
}

}  // namespace cli
}  // namespace delayq
