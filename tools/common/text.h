// Copyright delayq authors.
//
// Text as the program and its server write it: UTF-8 checks, JSON strings,
// and one-line previews of payloads and errors. Needs nothing of delayq, so
// the HTTP transport can use it.

#ifndef DELAYQ_TOOLS_COMMON_TEXT_H_
#define DELAYQ_TOOLS_COMMON_TEXT_H_

#include <cstddef>
#include <string>

#include "absl/strings/string_view.h"
#include "src/common/utf8.h"

namespace delayq {
namespace cli {

// `text` as a quoted JSON string. REQUIRES: IsUtf8(text).
std::string JsonQuote(absl::string_view text);

// "name":"text", or "name_base64":"..." for bytes that are not UTF-8.
std::string JsonText(absl::string_view name, absl::string_view text);

// True when `text` is well-formed UTF-8 (so JSON can carry it as a string).
using ::delayq::internal::IsUtf8;

// A one-line, printable preview of a payload or error: C escapes for
// control and non-UTF-8 bytes, cut to `max` characters with "...".
std::string Preview(absl::string_view text, size_t max);

}  // namespace cli
}  // namespace delayq

#endif  // DELAYQ_TOOLS_COMMON_TEXT_H_
