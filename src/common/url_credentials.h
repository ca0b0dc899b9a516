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

// Whether `credentials`, all of a Redis URL between its scheme and its last
// '@', hold a '?' or '#'. A URL's userinfo holds neither unencoded (RFC
// 3986), and such a URL is ambiguous: its '@' may be a query value's
// ("h:1?password=p@ss"), or its '?' a password's (":S3cret?Pw@host").
// ParseRedisUrl() refuses it and RedactedUrl() hides all after its scheme.
bool CredentialsHoldQuery(absl::string_view credentials);

}  // namespace internal
}  // namespace delayq

#endif  // DELAYQ_SRC_COMMON_URL_CREDENTIALS_H_
