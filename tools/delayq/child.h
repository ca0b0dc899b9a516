// Copyright delayq authors.
//
// Running one command for one job: the payload on its stdin, the tail of its
// stderr kept for the job's error, and a time limit enforced with SIGTERM,
// then SIGKILL.

#ifndef DELAYQ_TOOLS_DELAYQ_CHILD_H_
#define DELAYQ_TOOLS_DELAYQ_CHILD_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "tools/delayq/group_guard.h"

namespace delayq {
namespace cli {

// How much of a command's stderr is kept for the job's error.
inline constexpr size_t kStderrTailBytes = 2048;

struct ChildSpec {
  std::string path;               // resolved program (see FindProgram)
  std::vector<std::string> argv;  // argv[0] first
  std::vector<std::string> env;   // "NAME=value"
  absl::Duration timeout = absl::InfiniteDuration();
  // After SIGTERM at the timeout, how long before SIGKILL.
  absl::Duration kill_grace = absl::Seconds(5);
  // When set, kills the command's process group should the worker die
  // while it runs.
  GroupGuard* guard = nullptr;
  // When true the command's stdout is kept (ChildResult::output), up to
  // `max_output` bytes, instead of going to ours.
  bool keep_output = false;
  size_t max_output = 0;
};

struct ChildResult {
  bool timed_out = false;
  int exit_code = -1;  // when it exited
  int signal = 0;      // when a signal ended it
  std::string stderr_tail;
  // With keep_output: its stdout, and whether it wrote more than
  // max_output (the rest is read and dropped).
  std::string output;
  bool output_over = false;
  absl::Duration elapsed;

  bool ok() const { return !timed_out && exit_code == 0; }
};

// FindProgram()
//
// `name` as execve() wants it: as given when it contains a '/', else the
// first executable match on $PATH. NotFound when there is none.
absl::StatusOr<std::string> FindProgram(absl::string_view name);

// RunChild()
//
// Runs the program in its own process group (so a Ctrl-C meant for the
// worker does not reach it, and a timeout kills everything it started),
// writes `input` to its stdin, and waits for it to end. Its stdout goes to
// ours, or is kept with keep_output; its stderr is copied to ours and its last
// kStderrTailBytes kept. On Linux the program gets SIGKILL if the thread that
// started it dies, and with a `guard` so does its whole process group if the
// worker dies, so a killed worker leaves no command behind. Errors only when
// the program could not be started at all.
absl::StatusOr<ChildResult> RunChild(const ChildSpec& spec,
                                     absl::string_view input);

}  // namespace cli
}  // namespace delayq

#endif  // DELAYQ_TOOLS_DELAYQ_CHILD_H_
