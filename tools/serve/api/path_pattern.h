// Copyright delayq authors.
//
// A route's path pattern: literal text with captures, "([^/]+)" (one path
// segment) and at most one "(.+)" (any text on one line, slashes too, as
// long as the rest of the pattern still matches what follows; the longest
// such). The whole path must match:
//
//   PathPattern("/v1/jobs/(.+)/ack").Match("/v1/jobs/a/b/ack", &captures);
//   // true, captures == {"a/b"}
//
// Why not std::regex: libstdc++ matches with a recursion per character, and
// a path of some 900 bytes overflowed a connection thread's 256 KiB stack.
// This matcher's recursion is as deep as the pattern has parts.

#ifndef DELAYQ_TOOLS_SERVE_API_PATH_PATTERN_H_
#define DELAYQ_TOOLS_SERVE_API_PATH_PATTERN_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace delayq {
namespace serve {

class PathPattern {
 public:
  explicit PathPattern(absl::string_view pattern);

  // Whether `path` matches as a whole; if so, *captures holds what each
  // capture matched, in order.
  bool Match(absl::string_view path, std::vector<std::string>* captures) const;

 private:
  struct Part {
    enum Kind { kLiteral, kSegment, kAny } kind;
    std::string literal;  // kLiteral
  };

  // Matches parts_[part...] against `rest`, appending captures (views of
  // the path, so that trying a capture's lengths copies nothing).
  bool MatchFrom(size_t part, absl::string_view rest,
                 std::vector<absl::string_view>* captures) const;

  std::vector<Part> parts_;
};

}  // namespace serve
}  // namespace delayq

#endif  // DELAYQ_TOOLS_SERVE_API_PATH_PATTERN_H_
