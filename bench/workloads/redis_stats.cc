// Copyright delayq authors.

#include "bench/workloads/redis_stats.h"

#include <hiredis/hiredis.h>

#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "bench/workloads/report.h"

namespace delayq {
namespace bench {

absl::StatusOr<CommandCounts> ReadCommandStats(const std::string& host,
                                               int port) {
  redisContext* c = redisConnectWithTimeout(host.c_str(), port, {2, 0});
  if (c == nullptr || c->err) {
    std::string error = c ? c->errstr : "out of memory";
    if (c) redisFree(c);
    return absl::UnavailableError(
        absl::StrCat("cannot reach ", host, ":", port, ": ", error));
  }
  auto* reply = static_cast<redisReply*>(redisCommand(c, "INFO commandstats"));
  if (reply == nullptr || reply->type != REDIS_REPLY_STRING) {
    if (reply) freeReplyObject(reply);
    redisFree(c);
    return absl::UnavailableError("INFO commandstats failed");
  }
  // Lines look like "cmdstat_zadd:calls=12,usec=34,usec_per_call=2.8,...".
  CommandCounts counts;
  for (absl::string_view line :
       absl::StrSplit(absl::string_view(reply->str, reply->len), "\r\n")) {
    if (!absl::ConsumePrefix(&line, "cmdstat_")) continue;
    std::vector<absl::string_view> name_rest = absl::StrSplit(line, ':');
    if (name_rest.size() != 2) continue;
    for (absl::string_view field : absl::StrSplit(name_rest[1], ',')) {
      int64_t calls;
      if (absl::ConsumePrefix(&field, "calls=") &&
          absl::SimpleAtoi(field, &calls)) {
        counts[std::string(name_rest[0])] = calls;
      }
    }
  }
  freeReplyObject(reply);
  redisFree(c);
  return counts;
}

absl::StatusOr<IdleLoad> MeasureIdleLoad(const std::string& host, int port,
                                         absl::Duration window) {
  absl::StatusOr<CommandCounts> before = ReadCommandStats(host, port);
  if (!before.ok()) return before.status();
  const absl::Time start = absl::Now();
  absl::SleepFor(window);
  absl::StatusOr<CommandCounts> after = ReadCommandStats(host, port);
  if (!after.ok()) return after.status();
  const absl::Duration elapsed = absl::Now() - start;

  IdleLoad load;
  for (const auto& [name, calls] : *after) {
    auto it = before->find(name);
    int64_t delta = calls - (it == before->end() ? 0 : it->second);
    // The first snapshot's own INFO is counted in the second one.
    if (name == "info") delta -= 1;
    if (delta > 0) {
      load.by_command[name] = delta;
      load.total += delta;
    }
  }
  load.per_second = load.total / absl::ToDoubleSeconds(elapsed);
  return load;
}

int64_t ScriptCalls(const CommandCounts& counts) {
  int64_t calls = 0;
  for (const char* name : {"eval", "evalsha", "eval_ro", "evalsha_ro"}) {
    auto it = counts.find(name);
    if (it != counts.end()) calls += it->second;
  }
  return calls;
}

std::string CommandCountsJson(const CommandCounts& counts) {
  return absl::StrCat("{",
                      absl::StrJoin(counts, ", ",
                                    [](std::string* out, const auto& p) {
                                      absl::StrAppend(out, JsonString(p.first),
                                                      ": ", p.second);
                                    }),
                      "}");
}

}  // namespace bench
}  // namespace delayq
