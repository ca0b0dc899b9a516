// Copyright delayq authors.
//
// The hash tag of a job id: what lies between its first '{' and the next
// '}', when that is not empty. Redis Cluster hashes a key by its tag (so
// keys with one tag share a slot), a sharded Redis namespace places a job
// by its id's tag the same way, and the scheduler gives the ids it makes
// for a flow one tag on such a store (Backend::PlacesIdsByHashTag()).
// Spelled here once for all three.

#ifndef DELAYQ_SRC_COMMON_HASH_TAG_H_
#define DELAYQ_SRC_COMMON_HASH_TAG_H_

#include "absl/strings/string_view.h"

namespace delayq {
namespace internal {

// The tag of `id`, or "" when it has none (no '{', no '}' after it, or
// nothing between them).
inline absl::string_view HashTagOf(absl::string_view id) {
  const size_t open = id.find('{');
  if (open == absl::string_view::npos) return {};
  const size_t close = id.find('}', open + 1);
  if (close == absl::string_view::npos) return {};
  return id.substr(open + 1, close - open - 1);
}

}  // namespace internal
}  // namespace delayq

#endif  // DELAYQ_SRC_COMMON_HASH_TAG_H_
