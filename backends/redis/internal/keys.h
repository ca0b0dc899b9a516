// Copyright delayq authors.
//
// The Redis key layout, spelled once on the C++ side. The scripts spell it
// in scripts/lib/keys.lua (which also says what each key holds); a test
// evaluates keys.lua on a real server and checks that both agree.

#ifndef DELAYQ_BACKENDS_REDIS_INTERNAL_KEYS_H_
#define DELAYQ_BACKENDS_REDIS_INTERNAL_KEYS_H_

#include <string>

#include "absl/strings/string_view.h"

namespace delayq {
namespace redis_internal {

// ShardNamespace()
//
// The namespace whose hash tag shard `shard` of a namespace spread over
// several hash tags uses (RedisOptions::shards): `ns` itself for shard 0,
// so an unsharded namespace is its own shard 0, and "ns#k" for shard k.
std::string ShardNamespace(absl::string_view ns, int shard);

// ShardOfJob()
//
// The shard of the job `id` in a namespace of `shards` shards: CRC16
// (XMODEM) of the id's hash tag (what lies between its first '{' and the
// next '}', when that is not empty) or else of the whole id, as Redis
// Cluster hashes a key (KeySlot()), then modulo `shards`. Ids that share a
// tag share a shard.
int ShardOfJob(absl::string_view id, int shards);

class KeyLayout {
 public:
  // `ns` must contain no braces: "{ns}" is the Cluster hash tag of every
  // key, so a namespace lives in one slot.
  explicit KeyLayout(absl::string_view ns);

  // "{ns}:", the first key (KEYS[1]) of every script.
  const std::string& prefix() const { return prefix_; }

  // The hash of every job's record (record.h), by id.
  std::string Jobs() const;
  std::string Ready(absl::string_view topic) const;
  std::string Dead(absl::string_view topic) const;
  std::string TopicDelayed(absl::string_view topic) const;
  std::string TopicReserved(absl::string_view topic) const;
  // The topic's delayed and ready jobs that expire, by expire_at.
  std::string TopicExpiring(absl::string_view topic) const;
  // The topic's done jobs, and those of every topic, by the time each
  // leaves the store (scripts/lib/done.lua).
  std::string TopicDone(absl::string_view topic) const;
  // The topic's waiting jobs, by enqueue order (scripts/lib/depend.lua).
  std::string TopicWaiting(absl::string_view topic) const;
  std::string Done() const;
  // Ids held by dedup windows, by the time each is free again.
  std::string Held() const;
  // Limited topics: topic -> "rate:period:burst:concurrency:tat".
  std::string Limits() const;
  // Shard 0 of a sharded namespace: the limits as set, in the format of
  // Limits(), while every shard enforces its share in Limits().
  std::string LimitsAsked() const;
  // Topics with delayed jobs, each scored at or before its earliest run_at.
  std::string Due() const;
  std::string Reserved() const;
  std::string Topics() const;
  std::string Seq() const;
  // The minutes that have counts, and the totals (scripts/lib/counts.lua).
  std::string CountMinutes() const;
  std::string CountTotals() const;
  std::string Horizon() const;
  // The event log (events.cc): a stream, trimmed to the newest
  // EventLogOptions::max_events. No script touches it.
  std::string Events() const;
  // Paused topics.
  std::string Paused() const;
  // The names of all schedules, and one schedule's hash.
  std::string Schedules() const;
  std::string Schedule(absl::string_view name) const;
  std::string Meta() const;
  // The sharded pub/sub channel of the news: not a key, but it carries the
  // hash tag, so it lives in the namespace's slot.
  std::string NewsChannel() const;

 private:
  std::string Key(absl::string_view name) const;
  std::string Key(absl::string_view kind, absl::string_view name) const;

  std::string prefix_;
};

}  // namespace redis_internal
}  // namespace delayq

#endif  // DELAYQ_BACKENDS_REDIS_INTERNAL_KEYS_H_
