// Copyright delayq authors.
//
// Generated job ids: what the scheduler names a job that was given no id,
// "<prefix>-<serial>". The prefix is 12 lowercase hex digits drawn once per
// scheduler, so two processes do not collide; the serial counts from 1.
// Spelled here once, because a store may keep such ids apart from the
// others: the memory store keeps consecutive serials side by side.

#ifndef DELAYQ_SRC_COMMON_GENERATED_ID_H_
#define DELAYQ_SRC_COMMON_GENERATED_ID_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"

namespace delayq {
namespace internal {

// A new random prefix.
std::string NewGeneratedIdPrefix();

// The id of the `serial`-th job under `prefix`.
std::string GeneratedId(absl::string_view prefix, uint64_t serial);

// An id in the generated form, read back: the prefix as a number and the
// serial. Exactly one id has each pair (no leading zeros, lowercase hex).
struct GeneratedIdParts {
  uint64_t prefix;
  uint64_t serial;
};
std::optional<GeneratedIdParts> ParseGeneratedId(absl::string_view id);

}  // namespace internal
}  // namespace delayq

#endif  // DELAYQ_SRC_COMMON_GENERATED_ID_H_
