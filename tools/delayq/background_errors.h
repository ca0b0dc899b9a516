// Copyright delayq authors.
//
// BackgroundErrors — how `delayq work` and `delayq serve` tell of a store
// error that the scheduler's own threads meet and retry (a worker's reserve
// or ack, a lease renewal, the timer's promotion, a schedule's firing):
// one line on stderr, "delayq: reserve failed, retrying: <error>". An
// outage fails the same call many times a second, so each kind of call
// prints at most one line per `interval`, and the next one says how many
// were not printed.

#ifndef DELAYQ_TOOLS_DELAYQ_BACKGROUND_ERRORS_H_
#define DELAYQ_TOOLS_DELAYQ_BACKGROUND_ERRORS_H_

#include <cstdint>
#include <cstdio>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace delayq {
namespace cli {

class BackgroundErrors {
 public:
  explicit BackgroundErrors(absl::Duration interval = absl::Seconds(10),
                            FILE* out = stderr)
      : interval_(interval), out_(out) {}

  // Tells of `error` met by `what` ("reserve", "touch", ...) at `now`.
  // Thread-safe: the scheduler calls it from its threads.
  void Report(absl::string_view what, const absl::Status& error,
              absl::Time now = absl::Now());

 private:
  struct Kind {
    absl::Time printed = absl::InfinitePast();
    int64_t unprinted = 0;
  };

  const absl::Duration interval_;
  FILE* const out_;
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, Kind> kinds_ ABSL_GUARDED_BY(mu_);
};

}  // namespace cli
}  // namespace delayq

#endif  // DELAYQ_TOOLS_DELAYQ_BACKGROUND_ERRORS_H_
