// Copyright delayq authors.
//
// The worker's commands that go through a delayq::Scheduler, as a program
// embedding delayq does: enqueue, handle, reserve. See worker_main.cc for the
// protocol and the lines these commands print.

#ifndef DELAYQ_TESTS_TESTING_WORKER_SCHEDULER_COMMANDS_H_
#define DELAYQ_TESTS_TESTING_WORKER_SCHEDULER_COMMANDS_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "delayq/scheduler.h"

namespace delayq {
namespace worker {

// A scheduler on `url` whose store says "looked" the first time a Reserve()
// at the store finds nothing: from then on only the store's news (or a
// poll) can bring the process a job.
absl::StatusOr<std::unique_ptr<Scheduler>> OpenLookingScheduler(
    const std::string& url, absl::Duration poll, absl::Duration news_poll);

// What `enqueue` adds: GROUPS groups of ten jobs, ids PREFIX-g-k, group g
// on topics[g % topics.size()]. Without a fixed delay a third of the groups
// are ready at once and the others due within 2 s. Even groups go in one
// EnqueueBatch() call, odd ones job by job.
struct EnqueueSpec {
  std::string prefix;
  int groups = 0;
  std::vector<std::string> topics;
  absl::Duration delay = absl::InfiniteDuration();  // infinite: spread
  absl::Duration ttr = absl::Seconds(60);
  std::string payload = "work";
};
absl::Status EnqueueGroups(Scheduler& scheduler, const EnqueueSpec& spec);

// handle: a handler on `topic` that says "got ..." per job; with `hang`, a
// job whose payload is "hang" says "begin ID ATTEMPTS" and blocks its
// worker until the process is killed (a worker stuck mid-job).
void HandleTopic(Scheduler& scheduler, const std::string& topic, int threads,
                 int batch, bool hang);

// reserve / hold: a thread that Reserve()s `topic` with an hour's wait and
// says "got ..." per job; it acks each job, or with `hold` keeps the first
// lease and stops (a stalled worker).
void ReserveLoop(Scheduler& scheduler, const std::string& topic, bool hold);

}  // namespace worker
}  // namespace delayq

#endif  // DELAYQ_TESTS_TESTING_WORKER_SCHEDULER_COMMANDS_H_
