// Copyright delayq authors.
//
// WorkerProcess — a test's handle on one tests/testing/worker child process
// (the protocol is at the top of worker_main.cc). Every line the worker says
// is kept, in order, in lines(), so a test can look at the whole record once
// the worker is gone.
//
//   auto worker = WorkerProcess::Start(url, {"poll=200ms"});
//   ASSERT_NE(worker, nullptr);
//   ASSERT_OK(worker->Run("handle mail threads=3"));
//   ASSERT_OK(worker->Run("start"));
//   worker->NextStartingWith("got ", absl::Seconds(10));
//
// A test that depends on this target gets the worker binary in its
// runfiles.

#ifndef DELAYQ_TESTS_TESTING_WORKER_PROCESS_H_
#define DELAYQ_TESTS_TESTING_WORKER_PROCESS_H_

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "tests/testing/child_process.h"

namespace delayq {
namespace testing {

class WorkerProcess {
 public:
  // Start()
  //
  // Starts a worker on store `url` with `args` (poll=..., news_poll=...) and
  // waits until it says "ready". nullptr when it could not start.
  static std::unique_ptr<WorkerProcess> Start(
      const std::string& url, const std::vector<std::string>& args = {});

  pid_t pid() const { return pid_; }

  // Send()
  //
  // Writes one command line; false when the worker is gone.
  bool Send(const std::string& command);

  // Run()
  //
  // Sends `command` and waits for its "ok NAME". An "error" line, silence
  // for `patience` or the worker's end is an error naming what it said.
  absl::Status Run(const std::string& command,
                   absl::Duration patience = absl::Seconds(60));

  // Next()
  //
  // The next line; nullopt when `patience` passes first or the worker's
  // output ended.
  std::optional<std::string> Next(absl::Duration patience);

  // NextStartingWith()
  //
  // Reads lines until one starts with `prefix` and returns it; nullopt as
  // Next() does.
  std::optional<std::string> NextStartingWith(const std::string& prefix,
                                              absl::Duration patience);

  // Collect()
  //
  // Reads whatever the worker says within `patience` (returns early once
  // it is silent for a moment); how many lines it read.
  int Collect(absl::Duration patience);

  // ReadFor()
  //
  // Reads whatever the worker says during `period`, all of it.
  void ReadFor(absl::Duration period);

  // Every line read so far, in order.
  const std::vector<std::string>& lines() const { return lines_; }

  // Finish() closes the worker's input (it stops and exits), reads the rest
  // of what it said and returns its wait status. Wait() does the same
  // without closing its input. Kill() is a SIGKILL (its wait status); what
  // the worker said before it can still be read with Collect().
  int Finish();
  int Wait();
  int Kill();

 private:
  explicit WorkerProcess(const std::vector<std::string>& argv);
  void ReadToEnd();

  ChildProcess child_;
  pid_t pid_ = -1;
  std::vector<std::string> lines_;
};

// The exit status 0.
bool ExitedCleanly(int wait_status);

// Delivery — a "got" or "begin" line of a worker.
struct Delivery {
  std::string event;  // "got" or "begin"
  std::string id;
  int attempts = 0;
  int64_t micros = 0;  // got: the time since its payload's instant
};

// ParseDelivery()
//
// The delivery a line reports; nullopt for any other line.
std::optional<Delivery> ParseDelivery(const std::string& line);

// Deliveries()
//
// The deliveries among `lines`, in order.
std::vector<Delivery> Deliveries(const std::vector<std::string>& lines);

// GroupIds()
//
// The ids the worker's "enqueue PREFIX GROUPS ..." creates, PREFIX-g-k.
std::vector<std::string> GroupIds(const std::string& prefix, int groups);

}  // namespace testing
}  // namespace delayq

#endif  // DELAYQ_TESTS_TESTING_WORKER_PROCESS_H_
