// Copyright delayq authors.
//
// UTF-8 checks: what JSON can carry as a string, and what a store that keeps
// text as UTF-8 (PostgreSQL) can keep. Needs nothing of delayq, so the HTTP
// transport can use it.

#ifndef DELAYQ_SRC_COMMON_UTF8_H_
#define DELAYQ_SRC_COMMON_UTF8_H_

#include <string>

#include "absl/strings/string_view.h"

namespace delayq {
namespace internal {

// True when `text` is well-formed UTF-8: no overlong forms, surrogates or
// values past U+10FFFF.
bool IsUtf8(absl::string_view text);

// `text` with each byte that is not part of a well-formed UTF-8 sequence
// replaced by U+FFFD, for text that is kept to be read (an error) rather
// than matched (an id).
std::string ToValidUtf8(absl::string_view text);

}  // namespace internal
}  // namespace delayq

#endif  // DELAYQ_SRC_COMMON_UTF8_H_
