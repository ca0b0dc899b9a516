// Copyright delayq authors.
//
// redis_stats.h — how many commands a Redis server ran, from
// INFO commandstats, to measure the load a queue puts on the server while it
// has nothing to do.

#ifndef DELAYQ_BENCH_WORKLOADS_REDIS_STATS_H_
#define DELAYQ_BENCH_WORKLOADS_REDIS_STATS_H_

#include <cstdint>
#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace delayq {
namespace bench {

// Calls per command name ("evalsha", "zrangebyscore", ...).
using CommandCounts = std::map<std::string, int64_t>;

// Reads INFO commandstats from host:port. Unavailable when the server cannot
// be reached.
absl::StatusOr<CommandCounts> ReadCommandStats(const std::string& host,
                                               int port);

// IdleLoad
//
// The commands other clients sent during `window`: two INFO snapshots
// `window` apart, less the INFO calls made to take them.
struct IdleLoad {
  int64_t total = 0;
  double per_second = 0;
  CommandCounts by_command;
};
absl::StatusOr<IdleLoad> MeasureIdleLoad(const std::string& host, int port,
                                         absl::Duration window);

// EVAL and EVALSHA calls: the commands a Lua script runs are counted in
// INFO commandstats too, so a client's round trips are the script calls
// plus the commands it sends outside scripts.
int64_t ScriptCalls(const CommandCounts& counts);

// {"evalsha": 10, ...} of the non-zero counts.
std::string CommandCountsJson(const CommandCounts& counts);

}  // namespace bench
}  // namespace delayq

#endif  // DELAYQ_BENCH_WORKLOADS_REDIS_STATS_H_
