// Copyright delayq authors.
//
// RedisCluster — a real Redis Cluster for tests: three primaries with a
// replica each, on loopback ports, made one cluster with
// `redis-cli --cluster create`, stopped with the object.
//
//   ASSERT_OK_AND_ASSIGN(auto cluster, testing::RedisCluster::Start());
//   options.cluster_nodes = cluster->Seeds();

#ifndef DELAYQ_TESTS_REDIS_REDIS_TEST_CLUSTER_H_
#define DELAYQ_TESTS_REDIS_REDIS_TEST_CLUSTER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "delayq/redis_backend.h"
#include "tests/testing/redis_server.h"

namespace delayq {
namespace testing {

class RedisCluster {
 public:
  // Start()
  //
  // Six nodes made one cluster (slots spread evenly over the primaries),
  // returned once every node says the cluster is ok. A missing
  // redis-server or redis-cli is an error, never a skip.
  static absl::StatusOr<std::unique_ptr<RedisCluster>> Start();

  // Every node's address, for RedisOptions::cluster_nodes.
  std::vector<RedisEndpoint> Seeds() const;
  // "127.0.0.1:p1,127.0.0.1:p2,...", for a redis+cluster:// URL.
  std::string SeedList() const;

  // The port of the primary that serves `slot` now, by CLUSTER SLOTS of
  // the first node that answers; 0 when none does.
  int OwnerOf(int slot) const;
  // The port of another primary than `port`.
  int OtherPrimary(int port) const;

  // MigrateSlot()
  //
  // Moves `slot` to the primary at `to_port` as an operator's resharding
  // does: IMPORTING on the target, MIGRATING on the source, then MIGRATE
  // one key at a time with `pause` after each (so calls meet the slot half
  // moved), then SETSLOT ... NODE on every primary.
  absl::Status MigrateSlot(int slot, int to_port, absl::Duration pause);

  // The node on `port`, to stop or kill.
  RedisServer* Node(int port);

  // Waits until every running node says cluster_state:ok and agrees that
  // `slot` is served by a running primary.
  absl::Status AwaitHealthy(int slot, absl::Duration limit);

 private:
  RedisCluster() = default;
  std::string NodeId(int port) const;

  std::vector<std::unique_ptr<RedisServer>> nodes_;
};

}  // namespace testing
}  // namespace delayq

#endif  // DELAYQ_TESTS_REDIS_REDIS_TEST_CLUSTER_H_
