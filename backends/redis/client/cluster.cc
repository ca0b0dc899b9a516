// Copyright delayq authors.

#include "backends/redis/client/cluster.h"

#include <cstdint>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "src/common/hash_tag.h"
#include "src/common/status_macros.h"

namespace delayq {
namespace redis_internal {
namespace {

// CRC16-CCITT as XMODEM computes it (polynomial 0x1021, start 0, no bit
// reversal), which Redis Cluster specifies for key slots.
uint16_t Crc16(absl::string_view bytes) {
  uint16_t crc = 0;
  for (unsigned char b : bytes) {
    crc ^= static_cast<uint16_t>(b) << 8;
    for (int bit = 0; bit < 8; ++bit) {
      crc = (crc & 0x8000) != 0 ? static_cast<uint16_t>((crc << 1) ^ 0x1021)
                                : static_cast<uint16_t>(crc << 1);
    }
  }
  return crc;
}

absl::string_view Str(const redisReply* r) { return {r->str, r->len}; }

// The primary of `entry`, one element of a CLUSTER SLOTS reply ([first
// slot, last slot, [host, port, id, ...], replicas...]), when it covers
// `slot`. An empty host means the node that answered.
std::optional<HostPort> PrimaryFor(const redisReply* entry, int slot,
                                   const HostPort& asked) {
  if (entry->type != REDIS_REPLY_ARRAY || entry->elements < 3) {
    return std::nullopt;
  }
  const redisReply* first = entry->element[0];
  const redisReply* last = entry->element[1];
  const redisReply* node = entry->element[2];
  if (first->type != REDIS_REPLY_INTEGER || last->type != REDIS_REPLY_INTEGER ||
      slot < first->integer || slot > last->integer ||
      node->type != REDIS_REPLY_ARRAY || node->elements < 2 ||
      node->element[0]->type != REDIS_REPLY_STRING ||
      node->element[1]->type != REDIS_REPLY_INTEGER) {
    return std::nullopt;
  }
  HostPort at;
  at.host = std::string(Str(node->element[0]));
  if (at.host.empty() || at.host == "?") at.host = asked.host;
  at.port = static_cast<int>(node->element[1]->integer);
  return at;
}

}  // namespace

int KeySlot(absl::string_view key) {
  const absl::string_view tag = internal::HashTagOf(key);
  return Crc16(tag.empty() ? key : tag) % kClusterSlots;
}

std::optional<Redirect> ParseRedirect(const redisReply* reply) {
  if (reply->type != REDIS_REPLY_ERROR) return std::nullopt;
  absl::string_view text = Str(reply);
  Redirect r;
  if (absl::ConsumePrefix(&text, "ASK ")) {
    r.ask = true;
  } else if (!absl::ConsumePrefix(&text, "MOVED ")) {
    return std::nullopt;
  }
  // "<slot> <host>:<port>"
  const size_t space = text.find(' ');
  if (space == absl::string_view::npos) return std::nullopt;
  std::optional<HostPort> to = ParseHostPort(text.substr(space + 1));
  if (!to.has_value()) return std::nullopt;
  r.to = *std::move(to);
  return r;
}

SlotLocator::SlotLocator(std::vector<HostPort> seeds, int slot,
                         PoolOptions dial)
    : seeds_(std::move(seeds)), slot_(slot), dial_(std::move(dial)) {}

std::string SlotLocator::Describe() const {
  std::vector<std::string> names;
  for (const HostPort& s : seeds_) names.push_back(HostPortText(s));
  return absl::StrCat("slot ", slot_, " of the cluster at ",
                      absl::StrJoin(names, ","));
}

std::vector<HostPort> SlotLocator::Nodes() const {
  std::vector<HostPort> nodes = seeds_;
  internal::MutexLock lock(&mu_);
  nodes.insert(nodes.end(), learned_.begin(), learned_.end());
  return nodes;
}

void SlotLocator::Learn(const HostPort& node) {
  for (const HostPort& s : seeds_) {
    if (s.host == node.host && s.port == node.port) return;
  }
  internal::MutexLock lock(&mu_);
  for (const HostPort& n : learned_) {
    if (n.host == node.host && n.port == node.port) return;
  }
  learned_.push_back(node);
}

absl::StatusOr<HostPort> SlotLocator::Lookup() {
  std::vector<std::string> errors;
  for (const HostPort& node : Nodes()) {
    absl::StatusOr<HostPort> found = Ask(node);
    if (found.ok()) return found;
    errors.push_back(std::string(found.status().message()));
  }
  return absl::UnavailableError(
      absl::StrCat("redis: no node could say who serves ", Describe(), ": ",
                   absl::StrJoin(errors, "; ")));
}

absl::StatusOr<HostPort> SlotLocator::Ask(const HostPort& node) {
  Target target;
  target.host = node.host;
  target.port = node.port;
  target.endpoint = HostPortText(node);
  DQ_ASSIGN_OR_RETURN(std::unique_ptr<Link> link, Dial(target, dial_));
  std::vector<Command> commands;
  if (Command auth = AuthCommand(dial_); !auth.empty()) {
    commands.push_back(std::move(auth));
  }
  commands.push_back({"CLUSTER", "SLOTS"});
  DQ_ASSIGN_OR_RETURN(std::vector<Reply> replies,
                      Exchange(*link, commands,
                               Clock::now() + absl::ToChronoMicroseconds(
                                                  dial_.command_timeout)));
  for (const Reply& reply : replies) {
    if (reply->type == REDIS_REPLY_ERROR) {
      const absl::Status refused = ErrorReplyStatus(Str(reply.get()));
      return absl::Status(
          refused.code(),
          absl::StrCat("node ", target.endpoint, ": ", refused.message()));
    }
  }
  const redisReply* map = replies.back().get();
  std::optional<HostPort> owner;
  if (map->type == REDIS_REPLY_ARRAY) {
    for (size_t i = 0; i < map->elements && !owner.has_value(); ++i) {
      owner = PrimaryFor(map->element[i], slot_, node);
    }
    // Every node of the map is worth asking next time (a seed may go).
    for (size_t i = 0; i < map->elements; ++i) {
      const redisReply* e = map->element[i];
      for (size_t k = 2; e->type == REDIS_REPLY_ARRAY && k < e->elements; ++k) {
        const redisReply* n = e->element[k];
        if (n->type == REDIS_REPLY_ARRAY && n->elements >= 2 &&
            n->element[0]->type == REDIS_REPLY_STRING &&
            n->element[1]->type == REDIS_REPLY_INTEGER &&
            n->element[0]->len > 0) {
          Learn({std::string(Str(n->element[0])),
                 static_cast<int>(n->element[1]->integer)});
        }
      }
    }
  }
  if (!owner.has_value()) {
    return absl::UnavailableError(absl::StrCat(
        "node ", target.endpoint, ": no primary serves slot ", slot_,
        " (the cluster is not ready, or the slot is not assigned)"));
  }
  return *owner;
}

}  // namespace redis_internal
}  // namespace delayq
