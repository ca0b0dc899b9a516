// Copyright delayq authors.
//
// GroupGuard — the commands' process groups die with their worker, however
// the worker dies.
//
// Each command runs in a process group of its own, and gets SIGKILL when the
// worker thread that started it dies (PR_SET_PDEATHSIG). That reaches the
// command's own process only: what it started (`sh -c 'a & b; wait'`) would
// outlive a SIGKILLed worker while the job, its lease lapsed, runs again
// elsewhere: two copies at once.
//
// So `delayq work` forks a guard before anything else: a process that holds
// the read end of a pipe whose write end only the worker has. Each command
// tells it its process group before it execs (so before it can start
// anything), and the worker tells it when the command has ended.
// When the pipe ends (the worker is gone, however it died) the guard kills
// every group still running, and exits.

#ifndef DELAYQ_TOOLS_DELAYQ_GROUP_GUARD_H_
#define DELAYQ_TOOLS_DELAYQ_GROUP_GUARD_H_

#include <sys/types.h>

#include <memory>

#include "absl/status/statusor.h"

namespace delayq {
namespace cli {

class GroupGuard {
 public:
  // Forks the guard. Call it before starting threads; the guard itself only
  // makes plain system calls, so a later fork of a threaded process would
  // work too.
  static absl::StatusOr<std::unique_ptr<GroupGuard>> Start();

  // Ends the guard, which kills the groups still watched.
  ~GroupGuard();

  GroupGuard(const GroupGuard&) = delete;
  GroupGuard& operator=(const GroupGuard&) = delete;

  // The command whose process group is `group` started, or ended (what it
  // left running in the background is then its own). Thread-safe, and
  // safe in a forked child (one write()).
  void Watch(pid_t group);
  void Forget(pid_t group);

 private:
  GroupGuard(int fd, pid_t pid) : fd_(fd), pid_(pid) {}

  const int fd_;     // the pipe's write end
  const pid_t pid_;  // the guard
};

}  // namespace cli
}  // namespace delayq

#endif  // DELAYQ_TOOLS_DELAYQ_GROUP_GUARD_H_
