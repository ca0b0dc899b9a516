// Copyright delayq authors.
//
// Locator — where a store's calls go when that is not one fixed address:
// the primary that Redis Sentinel names (sentinel.h), or the node of a
// Redis Cluster that owns the namespace's slot (cluster.h). Private to the
// Redis backend.
//
// The address found is kept until a caller reports that it stopped being
// right (Forget(): a connection to it failed, or it said it is a replica),
// and the next Find() looks it up again; or until someone learns the new
// one (Use(): a sentinel's switch notice, a cluster's MOVED redirect).
// generation() changes with every new address, so that connections opened
// to an older one can be retired.
//
// Thread-safe.

#ifndef DELAYQ_BACKENDS_REDIS_CLIENT_LOCATOR_H_
#define DELAYQ_BACKENDS_REDIS_CLIENT_LOCATOR_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "src/common/mutex.h"

namespace delayq {
namespace redis_internal {

struct HostPort {
  std::string host;
  int port = 0;
};

// host:port, with an IPv6 host in brackets.
std::string HostPortText(const HostPort& e);

// "host:port" (the host may hold colons, IPv6), as MOVED and ASK name a
// node; nullopt when there is no port.
std::optional<HostPort> ParseHostPort(absl::string_view text);

// An address and the locator's generation() when it was found.
struct Found {
  HostPort at;
  uint64_t generation = 0;
};

class Locator {
 public:
  virtual ~Locator() = default;

  // Where calls go: the address found last, or what Lookup() finds now.
  absl::StatusOr<Found> Find();

  // The server named `endpoint` (HostPortText()) is no longer the right
  // one: if that is the address found last, the next Find() looks again.
  void Forget(absl::string_view endpoint);

  // Calls go to `at` from now on.
  Found Use(const HostPort& at);

  // Bumped whenever the address changes.
  uint64_t generation() const;

  // How messages name where calls go, e.g. "primary 'NAME' (sentinels
  // h1:p1,h2:p2)".
  virtual std::string Describe() const = 0;

  // Whether a new connection checks with ROLE that it reached a primary.
  virtual bool ChecksRole() const = 0;

  // Starts whatever listens for news of the address. Once.
  virtual absl::Status StartWatching() { return absl::OkStatus(); }

 protected:
  // Asks whoever knows where calls go now; Unavailable when nobody can say.
  virtual absl::StatusOr<HostPort> Lookup() = 0;

 private:
  mutable internal::Mutex mu_;
  std::optional<HostPort> known_ ABSL_GUARDED_BY(mu_);
  uint64_t generation_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace redis_internal
}  // namespace delayq

#endif  // DELAYQ_BACKENDS_REDIS_CLIENT_LOCATOR_H_
