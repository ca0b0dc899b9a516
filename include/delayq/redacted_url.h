// Copyright delayq authors.
//
// RedactedUrl(): a store URL as every message of delayq quotes it.

#ifndef DELAYQ_REDACTED_URL_H_
#define DELAYQ_REDACTED_URL_H_

#include <string>

#include "absl/strings/string_view.h"

namespace delayq {

// RedactedUrl()
//
// `url` as it may be shown: whatever could hold a password, everything from
// "://" to the last '@', becomes "***" (a password may hold '/' or '@'
// itself, so this may hide a little more than the password). Every message
// and error of delayq that quotes a store URL quotes it so.
std::string RedactedUrl(absl::string_view url);

}  // namespace delayq

#endif  // DELAYQ_REDACTED_URL_H_
