// Copyright delayq authors.
//
// Where a Redis URL's credentials end, as RedactedUrl() and ParseRedisUrl()
// both read it. Written once so that the URL the parser reads is the URL
// the redaction hides: a password the redaction does not hide must never
// reach a parser's error.

#ifndef DELAYQ_SRC_COMMON_URL_CREDENTIALS_H_
#define DELAYQ_SRC_COMMON_URL_CREDENTIALS_H_

#include "absl/strings/string_view.h"

namespace delayq {
namespace internal {

// Whether the '@' that ends `credentials` (all of a Redis URL between its
// scheme and its last '@') may be inside a query's value
// ("h:1?password=p@ss"): a '?' or '#' that follows a plain authority, a
// path, or text without the ':' a password starts with, starts a query,
// and then what follows the '@' is that value's rest. A '?' after anything
// else is a password's (":S3cret?Pw@host"). `socket` is true for
// redis+unix://.
bool AtIsInQueryValue(absl::string_view credentials, bool socket);

}  // namespace internal
}  // namespace delayq

#endif  // DELAYQ_SRC_COMMON_URL_CREDENTIALS_H_
