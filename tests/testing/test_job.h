// Copyright delayq authors.
//
// PlainJob() and TestJob() — the job a test adds when only its id, topic
// and time matter: payload "p" and, for PlainJob(), every other setting as
// NewJob has it; TestJob() also sets a ttr of 30 s and 3 attempts. A test
// that checks another field sets it on the result.

#ifndef DELAYQ_TESTS_TESTING_TEST_JOB_H_
#define DELAYQ_TESTS_TESTING_TEST_JOB_H_

#include <string>
#include <utility>

#include "absl/time/time.h"
#include "delayq/backend.h"

namespace delayq {
namespace testing {

inline NewJob PlainJob(std::string id, std::string topic, absl::Time run_at) {
  NewJob job;
  job.id = std::move(id);
  job.topic = std::move(topic);
  job.payload = "p";
  job.run_at = run_at;
  return job;
}

inline NewJob TestJob(std::string id, std::string topic, absl::Time run_at) {
  NewJob job = PlainJob(std::move(id), std::move(topic), run_at);
  job.ttr = absl::Seconds(30);
  job.max_attempts = 3;
  return job;
}

}  // namespace testing
}  // namespace delayq

#endif  // DELAYQ_TESTS_TESTING_TEST_JOB_H_
