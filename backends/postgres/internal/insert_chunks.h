// Copyright delayq authors.
//
// insert_chunks.h — how a batch of new jobs is split across the insert
// statements of its one transaction. The payloads travel as one bytea[]
// parameter in hex text, twice their size, and PostgreSQL takes no value
// over 1 GiB: a batch of 520 payloads of 1 MiB in one statement is refused
// (after the whole gigabyte was sent). Split, the batch stays one
// transaction, all or nothing, whatever its size.

#ifndef DELAYQ_BACKENDS_POSTGRES_INTERNAL_INSERT_CHUNKS_H_
#define DELAYQ_BACKENDS_POSTGRES_INTERNAL_INSERT_CHUNKS_H_

#include <cstddef>
#include <vector>

#include "absl/types/span.h"

namespace delayq {
namespace postgres_internal {

// The hex text of the payloads one insert statement carries at most
// (unless one payload alone is more): far below the 1 GiB limit, and
// large enough that a batch of ordinary jobs takes one statement.
inline constexpr size_t kInsertHexBytes = size_t{64} << 20;

// The ends (exclusive) of consecutive runs of the payloads whose sizes are
// `payload_sizes`, in order: each run's payloads, as hex, take at most
// `max_hex_bytes`, except a run of one payload that alone takes more. The
// last end is payload_sizes.size(); none for none.
std::vector<size_t> InsertChunkEnds(absl::Span<const size_t> payload_sizes,
                                    size_t max_hex_bytes);

}  // namespace postgres_internal
}  // namespace delayq

#endif  // DELAYQ_BACKENDS_POSTGRES_INTERNAL_INSERT_CHUNKS_H_
