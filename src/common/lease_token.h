// Copyright delayq authors.
//
// Lease tokens: the fencing token a reservation gets, which the holder shows
// to Ack, Fail, Release or Touch. A token must be unguessable: a client that
// could work out another's token from its own could end that client's lease.
// So each Reserve call draws its first token from the kernel's
// cryptographically secure generator, and the leases of one call (which all
// go to one caller) take it and the numbers after it. Spelled here once, for
// every store.

#ifndef DELAYQ_SRC_COMMON_LEASE_TOKEN_H_
#define DELAYQ_SRC_COMMON_LEASE_TOKEN_H_

#include <cstdint>

namespace delayq {
namespace internal {

// Tokens are below 2^52, so that Redis's Lua (whose numbers are doubles)
// holds them, and a call's following tokens, exactly.
inline constexpr uint64_t kLeaseTokenLimit = uint64_t{1} << 52;

// A Reserve call's first token: uniform in [1, kLeaseTokenLimit), from
// getrandom(2). Two reservations of one job share a token with probability
// 2^-52. Thread-safe; a child process after fork() draws its own.
uint64_t NewFirstLeaseToken();

}  // namespace internal
}  // namespace delayq

#endif  // DELAYQ_SRC_COMMON_LEASE_TOKEN_H_
