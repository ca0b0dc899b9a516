// Copyright delayq authors.
//
// Which store a command works on, and opening a scheduler over it.

#ifndef DELAYQ_TOOLS_DELAYQ_STORE_H_
#define DELAYQ_TOOLS_DELAYQ_STORE_H_

#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "delayq/metrics.h"
#include "delayq/scheduler.h"
#include "tools/delayq/cli.h"

namespace delayq {
namespace cli {

// --store, else $DELAYQ_STORE, else "sqlite:delayq.db".
std::string StoreUrl(const Context& ctx);

// Opens the store and a scheduler over it. Only `add` and `work` create a
// SQLite file that does not exist yet; the others refuse with NotFound, so a
// typo in the path or a command run in the wrong directory is not mistaken
// for an empty queue.
//
// With `metrics`, the store's calls are timed by it (Metrics::Instrument);
// attaching it to the scheduler is the caller's. `news_poll_interval`, when
// given, replaces SchedulerOptions' default.
// The --poll flag (at least 10ms), or `fallback` when it is not given.
absl::StatusOr<absl::Duration> PollFlag(const Context& ctx,
                                        absl::Duration fallback);

absl::StatusOr<std::unique_ptr<Scheduler>> OpenScheduler(
    const Context& ctx, bool create,
    absl::Duration poll_interval = absl::Seconds(1), Metrics* metrics = nullptr,
    std::optional<absl::Duration> news_poll_interval = std::nullopt);

}  // namespace cli
}  // namespace delayq

#endif  // DELAYQ_TOOLS_DELAYQ_STORE_H_
