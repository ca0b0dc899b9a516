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
// `url` as it may be shown. In a Redis or PostgreSQL URL
// (postgres://, postgresql://) the credentials, everything
// between the scheme and the last '@', become "***", as do the values of
// query parameters named *password in any URL. What follows the
// credentials is shown only when it starts with a list of host:port (or an
// empty authority before a socket's path), and the credentials hold no
// '?' or '#' (their '@' may then be a query value's); a PostgreSQL URL's
// hosts may leave out their ports, and its authority may be empty (libpq's
// default socket). Otherwise all after
// the scheme is hidden, as the rest of a malformed URL may be a password
// that lost its '@'. A URL of another scheme, or of none,
// is hidden whole when it holds ':' or '@', except sqlite: and memory:,
// which take no credentials. This hides more than the password of a
// malformed URL, never less. Every message and error of delayq that quotes
// a store URL quotes it so, and ParseRedisUrl() reads the credentials the
// same way.
std::string RedactedUrl(absl::string_view url);

}  // namespace delayq

#endif  // DELAYQ_REDACTED_URL_H_
