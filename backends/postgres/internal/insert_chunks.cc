// Copyright delayq authors.

#include "backends/postgres/internal/insert_chunks.h"

namespace delayq {
namespace postgres_internal {
namespace {

// A payload in a bytea[]'s text: "\x", two hex digits a byte, quotes and
// a comma.
size_t HexBytes(size_t payload) { return 2 * payload + 8; }

}  // namespace

std::vector<size_t> InsertChunkEnds(absl::Span<const size_t> payload_sizes,
                                    size_t max_hex_bytes) {
  std::vector<size_t> ends;
  size_t run = 0;  // hex bytes of the run under way
  for (size_t i = 0; i < payload_sizes.size(); ++i) {
    const size_t bytes = HexBytes(payload_sizes[i]);
    if (run > 0 && run + bytes > max_hex_bytes) {
      ends.push_back(i);
      run = 0;
    }
    run += bytes;
  }
  if (!payload_sizes.empty()) ends.push_back(payload_sizes.size());
  return ends;
}

}  // namespace postgres_internal
}  // namespace delayq
