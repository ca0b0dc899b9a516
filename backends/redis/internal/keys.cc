// Copyright delayq authors.

#include "backends/redis/internal/keys.h"

#include "absl/strings/str_cat.h"
#include "backends/redis/client/cluster.h"

namespace delayq {
namespace redis_internal {

std::string ShardNamespace(absl::string_view ns, int shard) {
  if (shard == 0) return std::string(ns);
  return absl::StrCat(ns, "#", shard);
}

int ShardOfJob(absl::string_view id, int shards) {
  if (shards <= 1) return 0;
  return KeySlot(id) % shards;
}

KeyLayout::KeyLayout(absl::string_view ns)
    : prefix_(absl::StrCat("{", ns, "}:")) {}

std::string KeyLayout::Key(absl::string_view name) const {
  return absl::StrCat(prefix_, name);
}

std::string KeyLayout::Key(absl::string_view kind,
                           absl::string_view name) const {
  return absl::StrCat(prefix_, kind, ":", name);
}

std::string KeyLayout::Jobs() const { return Key("jobs"); }
std::string KeyLayout::Ready(absl::string_view topic) const {
  return Key("ready", topic);
}
std::string KeyLayout::Dead(absl::string_view topic) const {
  return Key("dead", topic);
}
std::string KeyLayout::TopicDelayed(absl::string_view topic) const {
  return Key("tdelayed", topic);
}
std::string KeyLayout::TopicReserved(absl::string_view topic) const {
  return Key("treserved", topic);
}
std::string KeyLayout::TopicExpiring(absl::string_view topic) const {
  return Key("texpire", topic);
}
std::string KeyLayout::TopicDone(absl::string_view topic) const {
  return Key("tdone", topic);
}
std::string KeyLayout::TopicWaiting(absl::string_view topic) const {
  return Key("twaiting", topic);
}
std::string KeyLayout::Done() const { return Key("done"); }
std::string KeyLayout::Held() const { return Key("held"); }
std::string KeyLayout::Limits() const { return Key("limits"); }
std::string KeyLayout::LimitsAsked() const { return Key("limits_asked"); }
std::string KeyLayout::Due() const { return Key("due"); }
std::string KeyLayout::Reserved() const { return Key("reserved"); }
std::string KeyLayout::Topics() const { return Key("topics"); }
std::string KeyLayout::Seq() const { return Key("seq"); }
std::string KeyLayout::Events() const { return Key("events"); }
std::string KeyLayout::CountMinutes() const { return Key("count_minutes"); }
std::string KeyLayout::CountTotals() const { return Key("count_totals"); }
std::string KeyLayout::Horizon() const { return Key("horizon"); }
std::string KeyLayout::Paused() const { return Key("paused"); }
std::string KeyLayout::Schedules() const { return Key("schedules"); }
std::string KeyLayout::Schedule(absl::string_view name) const {
  return Key("schedule", name);
}
std::string KeyLayout::Meta() const { return Key("meta"); }
std::string KeyLayout::NewsChannel() const { return Key("news"); }

}  // namespace redis_internal
}  // namespace delayq
