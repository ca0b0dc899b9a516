// Copyright delayq authors.

#include "tools/serve/api/path_pattern.h"

#include <algorithm>

#include "absl/base/internal/raw_logging.h"
#include "absl/strings/match.h"

namespace delayq {
namespace serve {
namespace {

constexpr absl::string_view kSegment = "([^/]+)";
constexpr absl::string_view kAny = "(.+)";

}  // namespace

PathPattern::PathPattern(absl::string_view pattern) {
  int any = 0;
  while (!pattern.empty()) {
    if (absl::StartsWith(pattern, kSegment) ||
        absl::StartsWith(pattern, kAny)) {
      const bool segment = absl::StartsWith(pattern, kSegment);
      parts_.push_back(Part{segment ? Part::kSegment : Part::kAny, ""});
      any += segment ? 0 : 1;
      pattern.remove_prefix(segment ? kSegment.size() : kAny.size());
      continue;
    }
    if (parts_.empty() || parts_.back().kind != Part::kLiteral) {
      parts_.push_back(Part{Part::kLiteral, ""});
    }
    parts_.back().literal.push_back(pattern.front());
    pattern.remove_prefix(1);
  }
  // Matching costs the path's length to the power of their number.
  ABSL_RAW_CHECK(any <= 1, "a path pattern has at most one (.+)");
}

bool PathPattern::Match(absl::string_view path,
                        std::vector<std::string>* captures) const {
  std::vector<absl::string_view> views;
  if (!MatchFrom(0, path, &views)) return false;
  captures->clear();
  for (absl::string_view view : views) captures->emplace_back(view);
  return true;
}

bool PathPattern::MatchFrom(size_t part, absl::string_view rest,
                            std::vector<absl::string_view>* captures) const {
  if (part == parts_.size()) return rest.empty();
  const Part& p = parts_[part];
  if (p.kind == Part::kLiteral) {
    return absl::StartsWith(rest, p.literal) &&
           MatchFrom(part + 1, rest.substr(p.literal.size()), captures);
  }
  // A segment stops at the first '/', any text at a line's end (as
  // std::regex's '.' did); either capture is at least one byte. The
  // longest that lets the rest match is taken.
  const size_t longest = std::min(
      rest.find_first_of(p.kind == Part::kSegment ? "/" : "\r\n"), rest.size());
  for (size_t length = longest; length >= 1; --length) {
    captures->push_back(rest.substr(0, length));
    if (MatchFrom(part + 1, rest.substr(length), captures)) return true;
    captures->pop_back();
  }
  return false;
}

}  // namespace serve
}  // namespace delayq
