// Copyright delayq authors.

#include "tools/delayq/child.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "delayq/clock.h"

namespace delayq {
namespace cli {
namespace {

bool IsExecutableFile(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
         access(path.c_str(), X_OK) == 0;
}

void SetNonBlocking(int fd) {
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

void WriteAll(int fd, const char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // our stderr is gone; the tail is still kept
    data += n;
    size -= static_cast<size_t>(n);
  }
}

// Keeps the last kStderrTailBytes of what the command wrote to stderr.
class Tail {
 public:
  void Append(const char* data, size_t size) {
    text_.append(data, size);
    if (text_.size() > 2 * kStderrTailBytes) Trim();
  }
  std::string Take() {
    Trim();
    size_t start = 0;
    // Start at a character, not inside a UTF-8 sequence cut by the trim.
    while (trimmed_ && start < text_.size() &&
           (static_cast<unsigned char>(text_[start]) & 0xC0) == 0x80) {
      ++start;
    }
    return text_.substr(start);
  }

 private:
  void Trim() {
    if (text_.size() <= kStderrTailBytes) return;
    text_.erase(0, text_.size() - kStderrTailBytes);
    trimmed_ = true;
  }
  std::string text_;
  bool trimmed_ = false;
};

// Reads what is available on `fd` into `tail` (and our stderr). False at
// end of file or on an error.
bool Drain(int fd, Tail& tail) {
  char buffer[4096];
  for (;;) {
    const ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n > 0) {
      tail.Append(buffer, static_cast<size_t>(n));
      WriteAll(STDERR_FILENO, buffer, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return n < 0 && errno == EAGAIN;
  }
}

// Reads what is available on `fd` into `result`'s output, up to `max`
// bytes; the rest is dropped. False at end of file or on an error.
bool DrainOutput(int fd, size_t max, ChildResult& result) {
  char buffer[4096];
  for (;;) {
    const ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n > 0) {
      const size_t room = max - result.output.size();
      const size_t take = std::min(room, static_cast<size_t>(n));
      result.output.append(buffer, take);
      if (take < static_cast<size_t>(n)) result.output_over = true;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return n < 0 && errno == EAGAIN;
  }
}

// Closes every descriptor from `first` on, in a child between fork and
// exec: the command gets stdin, stdout and stderr and nothing else of the
// worker's, whatever the worker opened (or inherited) without
// close-on-exec, such as a library's socket to the store.
void CloseDescriptorsFrom(int first) {
#ifdef SYS_close_range
  if (syscall(SYS_close_range, first, ~0U, 0) == 0) return;
#endif
  // Kernels before 5.9: every possible descriptor, one by one.
  const long most = sysconf(_SC_OPEN_MAX);
  for (long fd = first; fd < (most > 0 ? most : 65536); ++fd) {
    close(static_cast<int>(fd));
  }
}

}  // namespace

absl::StatusOr<std::string> FindProgram(absl::string_view name) {
  if (name.empty()) return absl::InvalidArgumentError("empty command");
  if (absl::StrContains(name, '/')) {
    if (IsExecutableFile(std::string(name))) return std::string(name);
    return absl::NotFoundError(
        absl::StrCat("cannot run ", name, ": not an executable file"));
  }
  const char* path = std::getenv("PATH");
  for (absl::string_view dir :
       absl::StrSplit(path != nullptr ? path : "/usr/bin:/bin", ':')) {
    const std::string candidate =
        absl::StrCat(dir.empty() ? "." : dir, "/", name);
    if (IsExecutableFile(candidate)) return candidate;
  }
  return absl::NotFoundError(absl::StrCat("command not found: ", name));
}

absl::StatusOr<ChildResult> RunChild(const ChildSpec& spec,
                                     absl::string_view input) {
  // Everything the child needs is built before fork(): between fork and
  // exec a child of a threaded process may only make plain system calls.
  std::vector<char*> argv, envp;
  for (const std::string& a : spec.argv)
    argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (const std::string& e : spec.env)
    envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);

  // O_CLOEXEC: commands started at the same time by other workers must not
  // inherit this one's pipes, or its stdin would never see end of file.
  // Without keep_output the command's stdout is ours (out stays -1).
  int in[2] = {-1, -1}, err[2] = {-1, -1}, out[2] = {-1, -1};
  if (pipe2(in, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0 ||
      (spec.keep_output && pipe2(out, O_CLOEXEC) != 0)) {
    const std::string why = std::strerror(errno);
    for (int fd : {in[0], in[1], err[0], err[1]}) {
      if (fd >= 0) close(fd);
    }
    return absl::ResourceExhaustedError(absl::StrCat("pipe: ", why));
  }
  const pid_t parent = getpid();
  const absl::Time start = RealClock().Now();
  const pid_t pid = fork();
  if (pid < 0) {
    const std::string why = std::strerror(errno);
    for (int fd : {in[0], in[1], err[0], err[1], out[0], out[1]}) {
      if (fd >= 0) close(fd);
    }
    return absl::ResourceExhaustedError(absl::StrCat("fork: ", why));
  }
  if (pid == 0) {
    setpgid(0, 0);
#ifdef __linux__
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
#endif
    // The guard hears of the group from here, before the command can start
    // anything: told by the worker after fork(), a worker killed before it
    // got to say it would leave the command's children running.
    if (spec.guard != nullptr) spec.guard->Watch(getpid());
    dup2(in[0], STDIN_FILENO);
    dup2(err[1], STDERR_FILENO);
    if (out[1] >= 0) dup2(out[1], STDOUT_FILENO);
    CloseDescriptorsFrom(3);
    // The worker blocks SIGINT/SIGTERM and ignores SIGPIPE; the command
    // starts with neither.
    struct sigaction dfl;
    std::memset(&dfl, 0, sizeof(dfl));
    dfl.sa_handler = SIG_DFL;
    sigaction(SIGPIPE, &dfl, nullptr);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    execve(spec.path.c_str(), argv.data(), envp.data());
    static const char kMessage[] = "delayq: exec failed\n";
    WriteAll(STDERR_FILENO, kMessage, sizeof(kMessage) - 1);
    _exit(127);
  }
  setpgid(pid, pid);  // as the child does: whichever runs first wins
  close(in[0]);
  close(err[1]);
  SetNonBlocking(in[1]);
  SetNonBlocking(err[0]);
  bool out_open = out[0] >= 0;
  if (out_open) {
    close(out[1]);
    SetNonBlocking(out[0]);
  }

  ChildResult result;
  Tail tail;
  size_t written = 0;
  bool in_open = true, err_open = true;
  if (input.empty()) {
    close(in[1]);
    in_open = false;
  }
  const absl::Time term_at = spec.timeout == absl::InfiniteDuration()
                                 ? absl::InfiniteFuture()
                                 : start + spec.timeout;
  absl::Time kill_at = absl::InfiniteFuture();
  int status = 0;
  for (;;) {
    pollfd fds[3];
    nfds_t n = 0;
    if (in_open) fds[n++] = {in[1], POLLOUT, 0};
    if (err_open) fds[n++] = {err[0], POLLIN, 0};
    if (out_open) fds[n++] = {out[0], POLLIN, 0};
    // Exit is noticed by waitpid(); while stderr is open its end of file
    // usually wakes us first, so the sleep between looks can be long.
    const absl::Time now = RealClock().Now();
    absl::Duration wait =
        err_open ? absl::Milliseconds(50) : absl::Milliseconds(2);
    wait = std::min(
        wait,
        std::max(
            absl::ZeroDuration(),
            std::min(result.timed_out ? kill_at : term_at, now + wait) - now));
    poll(fds, n, static_cast<int>(absl::ToInt64Milliseconds(wait)));
    for (nfds_t i = 0; i < n; ++i) {
      if (fds[i].revents == 0) continue;
      if (fds[i].fd == in[1]) {
        const ssize_t w =
            write(in[1], input.data() + written,
                  std::min<size_t>(input.size() - written, 1 << 16));
        if (w > 0) written += static_cast<size_t>(w);
        // EPIPE: the command does not read its input, which is its right.
        if (written == input.size() ||
            (w < 0 && errno != EAGAIN && errno != EINTR)) {
          close(in[1]);
          in_open = false;
        }
      } else if (fds[i].fd == out[0]) {
        if (!DrainOutput(out[0], spec.max_output, result)) {
          close(out[0]);
          out_open = false;
        }
      } else if (!Drain(err[0], tail)) {
        close(err[0]);
        err_open = false;
      }
    }
    if (waitpid(pid, &status, WNOHANG) == pid) break;
    const absl::Time later = RealClock().Now();
    if (!result.timed_out && later >= term_at) {
      result.timed_out = true;
      kill(-pid, SIGTERM);
      kill_at = later + spec.kill_grace;
    } else if (result.timed_out && later >= kill_at) {
      kill(-pid, SIGKILL);
      kill_at = absl::InfiniteFuture();
    }
  }
  result.elapsed = RealClock().Now() - start;
  // Whatever the command left on stderr; a background process of its own
  // that keeps the pipe open is not waited for.
  if (err_open) {
    Drain(err[0], tail);
    close(err[0]);
  }
  if (out_open) {
    DrainOutput(out[0], spec.max_output, result);
    close(out[0]);
  }
  if (in_open) close(in[1]);
  // A timed-out command's helpers go with it.
  if (result.timed_out) kill(-pid, SIGKILL);
  if (spec.guard != nullptr) spec.guard->Forget(pid);
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.signal = WTERMSIG(status);
  result.stderr_tail = tail.Take();
  return result;
}

}  // namespace cli
}  // namespace delayq
