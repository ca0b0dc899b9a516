// Copyright delayq authors.
//
// Bearer tokens: who may use the API. A server that listens beyond loopback
// must have a token; every request but the dashboard's static files then
// carries "Authorization: Bearer TOKEN".

#ifndef DELAYQ_TOOLS_SERVE_API_AUTH_H_
#define DELAYQ_TOOLS_SERVE_API_AUTH_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace delayq {
namespace serve {

// The token in `path`: its first line, without surrounding whitespace.
// InvalidArgument when the file cannot be read, its first line is over
// 4 KiB (it reads no more than that), or the token is shorter than 16
// characters (a guessable token is no protection).
absl::StatusOr<std::string> ReadTokenFile(const std::string& path);

// OK when `authorization` (the request's header, maybe empty) is
// "Bearer <token>"; Unauthenticated otherwise. Compares in constant time,
// so the reply's timing tells nothing about the token.
absl::Status CheckBearer(absl::string_view authorization,
                         absl::string_view token);

}  // namespace serve
}  // namespace delayq

#endif  // DELAYQ_TOOLS_SERVE_API_AUTH_H_
