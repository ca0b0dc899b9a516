// Copyright delayq authors.
//
// ChildProcess — a test's helper program run as a child process, spoken to
// through its stdin and stdout, one line at a time.
//
//   ChildProcess worker({"tests/testing/worker", url});
//   ASSERT_TRUE(worker.started());
//   worker.WriteLine("reserve mail");
//   std::optional<std::string> line = worker.ReadLine(absl::Seconds(10));
//
// What the child wrote before it died can still be read: each line the
// child writes with one write(2) is whole in the pipe even after a SIGKILL.
//
// The child dies with the test: a ChildProcess that is destroyed while its
// child runs kills it (SIGKILL) and reaps it, and the child gets SIGKILL if
// the test process dies first.

#ifndef DELAYQ_TESTS_TESTING_CHILD_PROCESS_H_
#define DELAYQ_TESTS_TESTING_CHILD_PROCESS_H_

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"

namespace delayq {
namespace testing {

class ChildProcess {
 public:
  // Starts argv[0] (a path, not searched on PATH) with `argv`.
  explicit ChildProcess(const std::vector<std::string>& argv);
  ~ChildProcess();

  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  bool started() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }

  // The next line the child printed, without its newline; nullopt when
  // `patience` passes first or the child closed its stdout.
  std::optional<std::string> ReadLine(absl::Duration patience);

  // Reads lines until one starts with `prefix`; returns it, or nullopt as
  // ReadLine() does. Lines before it are dropped.
  std::optional<std::string> ReadLineStartingWith(const std::string& prefix,
                                                  absl::Duration patience);

  // Writes `line` and a newline to the child's stdin; false when the child
  // is gone.
  bool WriteLine(const std::string& line);

  // Closes the child's stdin: a child that reads it sees the end of input.
  void CloseInput();

  // Closes the child's stdin and waits for it to exit; its wait status.
  int Finish();

  // Waits for the child to exit on its own; its wait status.
  int Wait();

  // SIGKILL, then reap; the wait status, or -1 when no child was running.
  int Kill();

 private:
  pid_t pid_ = -1;
  int stdin_ = -1;
  int stdout_ = -1;
  std::string buffered_;
};

}  // namespace testing
}  // namespace delayq

#endif  // DELAYQ_TESTS_TESTING_CHILD_PROCESS_H_
