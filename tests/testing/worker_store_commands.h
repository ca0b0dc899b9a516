// Copyright delayq authors.
//
// The worker's commands that use the store directly, through the Backend
// interface with `now` read from the real clock: what several processes do
// to one store below any scheduler. See worker_main.cc for the protocol.

#ifndef DELAYQ_TESTS_TESTING_WORKER_STORE_COMMANDS_H_
#define DELAYQ_TESTS_TESTING_WORKER_STORE_COMMANDS_H_

#include <cstdint>
#include <string>
#include <vector>

namespace delayq {
namespace worker {

// work THREADS JOBS TOPICS TAG: each thread, on a connection of its own,
// adds JOBS jobs (ids TAG-THREAD-N) over topics mp0..mp(TOPICS-1) and
// consumes from the same topics, now and then holding a lease past its ttr
// (300 ms) so the job goes to someone else and the late Ack is refused.
// Says "worked" once its jobs are added and the topics stayed empty a while.
void Work(const std::string& url, int threads, int jobs, int topics,
          const std::string& tag);

// churn TAG: adds, reserves and acks on topic "crash" until killed; a
// quarter of the leases (ttr 1 s) are left to expire.
[[noreturn]] void Churn(const std::string& url, const std::string& tag);

// drain THREADS TOPIC[,TOPIC...]: THREADS threads on one connection reserve
// and ack until the topics stay empty; odd threads reserve five at a time
// and ack them in one AckBatch() call.
// Says "acked ID" per job and then "drained".
void Drain(const std::string& url, int threads,
           const std::vector<std::string>& topics);

// ackat TOPIC AT_US: reserves one job of TOPIC (waiting up to 10 s for
// one), says "R ID TOKEN NOW_US DEADLINE_US", sleeps until AT_US
// (microseconds since the epoch, the real clock), says "I ID TOKEN" and
// acks it, then says "A ID TOKEN CODE". Processes given the same AT_US ack
// at the same moment.
void AckAt(const std::string& url, const std::string& topic, int64_t at_us);

// closeat BATCH AT_US: sleeps until AT_US, says "C BATCH", closes the batch
// and says "closed BATCH".
void CloseAt(const std::string& url, const std::string& batch, int64_t at_us);

// subscribe: opens a connection of its own, subscribes to the store's news
// and says "subscribed"; the subscription lives until the process ends.
void Subscribe(const std::string& url);

}  // namespace worker
}  // namespace delayq

#endif  // DELAYQ_TESTS_TESTING_WORKER_STORE_COMMANDS_H_
