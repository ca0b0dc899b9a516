// Copyright delayq authors.
//
// The ack list of POST /v1/leases/ack: {"leases": [{"id", "token"}, ...]},
// up to a thousand leases.
//
// Parsed into a JSON tree, such a body costs allocations per lease, a walk
// of the tree and the frees again: about nine times what scanning its bytes
// for exactly that shape costs, and three times what nlohmann's SAX reader
// costs (//bench:json_bench). So the body is first scanned, in the shape a
// client sends when all is well. Anything else (bad JSON, a wrong type, an
// unknown or repeated field, a list empty or too long), and strings with
// escapes or bytes beyond ASCII, go the general way: parsed into a tree and
// read by the same code as every other route, which says what is wrong.
// Both ways give the same answer; ack_list_test checks that they do.

#ifndef DELAYQ_TOOLS_SERVE_API_ACK_LIST_H_
#define DELAYQ_TOOLS_SERVE_API_ACK_LIST_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "tools/serve/api/json_codec.h"
#include "tools/serve/api/lease_cache.h"

namespace delayq {
namespace serve {

// The most leases one ack request may finish.
inline constexpr int kMaxAcks = 1000;

// The list ({"id": "...", "token": "123"} or 123 each) read the quick way when
// the body has the plain shape, else the general way (with its error).
absl::StatusOr<std::vector<LeaseName>> ReadAckList(absl::string_view body);

// The two ways on their own, for the tests. The quick one returns nothing
// when the body is not of the plain shape.
std::optional<std::vector<LeaseName>> AckListFromText(absl::string_view body);
absl::StatusOr<std::vector<LeaseName>> AckListFromJson(const Json& body);

}  // namespace serve
}  // namespace delayq

#endif  // DELAYQ_TOOLS_SERVE_API_ACK_LIST_H_
