// Copyright delayq authors.

#include "tests/redis/redis_test_cluster.h"

#include <cstdlib>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "tests/redis/redis_test_server.h"
#include "tests/testing/files.h"

namespace delayq {
namespace testing {
namespace {

// One line of CLUSTER NODES: "<id> <ip:port@bus> <flags> <primary>
// <ping> <pong> <epoch> <link> <slot or range>...".
struct NodeLine {
  std::string id;
  int port = 0;
  bool primary = false;
  bool failed = false;
  std::vector<std::pair<int, int>> slots;
};

std::vector<NodeLine> ParseNodes(const std::string& text) {
  std::vector<NodeLine> nodes;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    const std::vector<absl::string_view> f =
        absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (f.size() < 8) continue;
    NodeLine n;
    n.id = std::string(f[0]);
    absl::string_view addr = f[1].substr(0, f[1].find('@'));
    (void)absl::SimpleAtoi(addr.substr(addr.rfind(':') + 1), &n.port);
    n.primary = absl::StrContains(f[2], "master");
    n.failed = absl::StrContains(f[2], "fail");
    for (size_t i = 8; i < f.size(); ++i) {
      if (absl::StartsWith(f[i], "[")) continue;  // a migration under way
      const std::vector<absl::string_view> range = absl::StrSplit(f[i], '-');
      int lo = 0, hi = 0;
      if (!absl::SimpleAtoi(range[0], &lo)) continue;
      hi = lo;
      if (range.size() == 2 && !absl::SimpleAtoi(range[1], &hi)) continue;
      n.slots.push_back({lo, hi});
    }
    nodes.push_back(std::move(n));
  }
  return nodes;
}

bool Ok(const std::vector<std::string>& reply) {
  return reply.size() == 1 && reply[0] == "OK";
}

}  // namespace

absl::StatusOr<std::unique_ptr<RedisCluster>> RedisCluster::Start() {
  std::unique_ptr<RedisCluster> cluster(new RedisCluster());
  std::vector<std::string> addresses;
  for (int i = 0; i < 6; ++i) {
    absl::StatusOr<std::unique_ptr<RedisServer>> node =
        RedisServer::StartClusterNode();
    if (!node.ok()) return node.status();
    addresses.push_back(absl::StrCat("127.0.0.1:", (*node)->port()));
    cluster->nodes_.push_back(*std::move(node));
  }
  const std::string log = cluster->nodes_[0]->dir() + "/cluster-create.log";
  const std::string command =
      absl::StrCat("redis-cli --cluster create ", absl::StrJoin(addresses, " "),
                   " --cluster-replicas 1 --cluster-yes > '", log, "' 2>&1");
  if (std::system(command.c_str()) != 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "redis-cli --cluster create failed (Debian package redis-tools):\n",
        ReadFile(log)));
  }
  if (absl::Status s = cluster->AwaitHealthy(0, absl::Seconds(30)); !s.ok()) {
    return s;
  }
  // Each primary's replica has synchronised, so WAIT 1 can be answered.
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  for (const auto& node : cluster->nodes_) {
    const std::vector<std::string> role = RawCommand(node->port(), {"ROLE"});
    if (role.empty() || role[0] != "master") continue;
    while (!ReplicaCaughtUp(node->port())) {
      if (absl::Now() > deadline) {
        return absl::DeadlineExceededError(absl::StrCat(
            "the replica of ", node->port(), " did not synchronise"));
      }
      absl::SleepFor(absl::Milliseconds(50));
    }
  }
  return cluster;
}

std::vector<RedisEndpoint> RedisCluster::Seeds() const {
  std::vector<RedisEndpoint> seeds;
  for (const auto& n : nodes_) seeds.push_back({"127.0.0.1", n->port()});
  return seeds;
}

std::string RedisCluster::SeedList() const {
  std::vector<std::string> seeds;
  for (const auto& n : nodes_)
    seeds.push_back(absl::StrCat("127.0.0.1:", n->port()));
  return absl::StrJoin(seeds, ",");
}

RedisServer* RedisCluster::Node(int port) {
  for (auto& n : nodes_) {
    if (n->port() == port) return n.get();
  }
  return nullptr;
}

std::string RedisCluster::NodeId(int port) const {
  const std::vector<std::string> id = RawCommand(port, {"CLUSTER", "MYID"});
  return id.size() == 1 ? id[0] : "";
}

int RedisCluster::OwnerOf(int slot) const {
  for (const auto& asked : nodes_) {
    if (!asked->running()) continue;
    const std::vector<std::string> text =
        RawCommand(asked->port(), {"CLUSTER", "NODES"});
    if (text.size() != 1 || absl::StartsWith(text[0], "ERR:")) continue;
    for (const NodeLine& n : ParseNodes(text[0])) {
      if (!n.primary || n.failed) continue;
      for (const auto& [lo, hi] : n.slots) {
        if (slot >= lo && slot <= hi) return n.port;
      }
    }
  }
  return 0;
}

int RedisCluster::OtherPrimary(int port) const {
  for (const auto& asked : nodes_) {
    if (!asked->running()) continue;
    const std::vector<std::string> text =
        RawCommand(asked->port(), {"CLUSTER", "NODES"});
    if (text.size() != 1) continue;
    for (const NodeLine& n : ParseNodes(text[0])) {
      if (n.primary && !n.failed && n.port != port && !n.slots.empty()) {
        return n.port;
      }
    }
  }
  return 0;
}

absl::Status RedisCluster::MigrateSlot(int slot, int to_port,
                                       absl::Duration pause) {
  const int from_port = OwnerOf(slot);
  if (from_port == 0 || from_port == to_port) {
    return absl::FailedPreconditionError("no primary to move the slot from");
  }
  const std::string from_id = NodeId(from_port), to_id = NodeId(to_port);
  const std::string s = absl::StrCat(slot);
  if (!Ok(RawCommand(to_port,
                     {"CLUSTER", "SETSLOT", s, "IMPORTING", from_id})) ||
      !Ok(RawCommand(from_port,
                     {"CLUSTER", "SETSLOT", s, "MIGRATING", to_id}))) {
    return absl::InternalError("CLUSTER SETSLOT IMPORTING/MIGRATING failed");
  }
  for (;;) {
    const std::vector<std::string> keys =
        RawCommand(from_port, {"CLUSTER", "GETKEYSINSLOT", s, "1"});
    if (keys.empty()) break;
    const std::vector<std::string> moved =
        RawCommand(from_port, {"MIGRATE", "127.0.0.1", absl::StrCat(to_port),
                               "", "0", "5000", "KEYS", keys[0]});
    if (!Ok(moved)) {
      return absl::InternalError(
          absl::StrCat("MIGRATE ", keys[0], ": ", absl::StrJoin(moved, " ")));
    }
    absl::SleepFor(pause);
  }
  // The target first, as redis-cli does: from then on the source's MOVED
  // leads to a node that serves the slot.
  std::vector<int> order = {to_port, from_port};
  for (const auto& n : nodes_) {
    if (n->running() && n->port() != to_port && n->port() != from_port) {
      order.push_back(n->port());
    }
  }
  for (int port : order) {
    // A replica refuses SETSLOT; it learns from its primary.
    RawCommand(port, {"CLUSTER", "SETSLOT", s, "NODE", to_id});
  }
  return absl::OkStatus();
}

absl::Status RedisCluster::AwaitHealthy(int slot, absl::Duration limit) {
  const absl::Time deadline = absl::Now() + limit;
  std::string last;
  while (absl::Now() < deadline) {
    bool ok = true;
    for (const auto& n : nodes_) {
      if (!n->running()) continue;
      const std::vector<std::string> info =
          RawCommand(n->port(), {"CLUSTER", "INFO"});
      if (info.size() != 1 || !absl::StrContains(info[0], "cluster_state:ok")) {
        ok = false;
        last = absl::StrCat("node ", n->port(), ": ",
                            info.empty() ? "" : info[0].substr(0, 40));
      }
    }
    const int owner = OwnerOf(slot);
    RedisServer* serving = Node(owner);
    if (serving == nullptr || !serving->running()) {
      ok = false;
      last = absl::StrCat("no running primary serves slot ", slot);
    }
    if (ok) return absl::OkStatus();
    absl::SleepFor(absl::Milliseconds(100));
  }
  return absl::DeadlineExceededError(
      absl::StrCat("the cluster did not become healthy: ", last));
}

}  // namespace testing
}  // namespace delayq
