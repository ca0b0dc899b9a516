// Copyright delayq authors.
//
// PrimaryLocator — where the primary of a Redis Sentinel deployment is now.
// Private to the Redis backend.
//
// The sentinels are asked (SENTINEL get-master-addr-by-name), in the order
// given, for the primary's address; the first answer is kept until a caller
// reports that it stopped being the primary (a connection to it failed, it
// answered READONLY, or ROLE called it a replica). The next caller asks the
// sentinels again. During a failover the sentinels name the old primary
// until they have promoted a new one, so calls fail with Unavailable for
// that while and then reach the new primary, with no restart.
//
// Once StartWatching() is called, a thread of its own also listens to the
// sentinels' +switch-master notices (on one sentinel at a time, the next
// one when it cannot be reached). A notice for this primary replaces the
// address at once, so a failover is followed even while the old primary
// still answers as one (cut off from the sentinels by a partition, its
// writes would be lost). generation() changes with every new address; the
// pool retires connections opened under an older one.
//
// Thread-safe.

#ifndef DELAYQ_BACKENDS_REDIS_CLIENT_SENTINEL_H_
#define DELAYQ_BACKENDS_REDIS_CLIENT_SENTINEL_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "backends/redis/client/locator.h"

namespace delayq {
namespace redis_internal {

// Defined in connection.h, push_io.h and tls.h, which include this.
struct PoolOptions;
struct Target;
class PushIo;
class TlsContext;

class PrimaryLocator final : public Locator {
 public:
  // `password` is sent with AUTH to each sentinel when not empty; with
  // `tls`, the sentinels are reached over TLS.
  PrimaryLocator(std::vector<HostPort> sentinels, std::string master,
                 std::string password, absl::Duration connect_timeout,
                 absl::Duration command_timeout,
                 std::shared_ptr<const TlsContext> tls = nullptr);
  // Stops the watching thread.
  ~PrimaryLocator();
  PrimaryLocator(const PrimaryLocator&) = delete;
  PrimaryLocator& operator=(const PrimaryLocator&) = delete;

  // Starts listening to +switch-master notices. Once.
  absl::Status StartWatching() override;

  // "primary 'NAME' (sentinels h1:p1,h2:p2)", for messages.
  std::string Describe() const override;

  // Every new connection checks with ROLE that it reached a primary: the
  // sentinels' answer may be stale.
  bool ChecksRole() const override { return true; }

 private:
  // The first answer of the sentinels, in order.
  absl::StatusOr<HostPort> Lookup() override;
  absl::StatusOr<HostPort> Ask(const HostPort& sentinel) const;
  static Target SentinelTarget(const HostPort& sentinel);
  PoolOptions DialOptions() const;
  // The watching thread's loop, and one connection's worth of it.
  void Watch();
  void WatchOne(const HostPort& sentinel, PushIo& io);

  const std::vector<HostPort> sentinels_;
  const std::string master_;
  const std::string password_;
  const absl::Duration connect_timeout_;
  const absl::Duration command_timeout_;
  const std::shared_ptr<const TlsContext> tls_;
  int wake_fd_ = -1;  // written once to stop the watcher
  std::thread watcher_;
};

}  // namespace redis_internal
}  // namespace delayq

#endif  // DELAYQ_BACKENDS_REDIS_CLIENT_SENTINEL_H_
