// Copyright delayq authors.
//
// DidYouMean() — the known word a mistyped one was most likely meant to
// be, for the command line's usage errors.

#ifndef DELAYQ_TOOLS_DELAYQ_SUGGEST_H_
#define DELAYQ_TOOLS_DELAYQ_SUGGEST_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace delayq {
namespace cli {

// The word of `known` nearest to `typed` (fewest single-letter insertions,
// deletions, substitutions or swaps of two neighbours), when it is near
// enough to be a slip: at most one edit for words up to four letters, two
// beyond. "" when none is.
std::string DidYouMean(absl::string_view typed,
                       const std::vector<std::string>& known);

}  // namespace cli
}  // namespace delayq

#endif  // DELAYQ_TOOLS_DELAYQ_SUGGEST_H_
