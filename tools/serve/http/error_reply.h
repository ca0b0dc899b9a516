// Copyright delayq authors.
//
// How a refused or failed request is answered, said once for the whole
// server: the HTTP status that matches an absl code, and the JSON body
// {"code": "NOT_FOUND", "message": "..."} of every error reply, whether the
// transport, the request guard or a route refuses the request.

#ifndef DELAYQ_TOOLS_SERVE_HTTP_ERROR_REPLY_H_
#define DELAYQ_TOOLS_SERVE_HTTP_ERROR_REPLY_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "tools/serve/http/http_message.h"

namespace delayq {
namespace serve {

// InvalidArgument/OutOfRange 400, Unauthenticated 401, PermissionDenied
// 403, NotFound 404, AlreadyExists/FailedPrecondition/Aborted 409,
// ResourceExhausted 429, Cancelled 499, Unimplemented 501, Unavailable 503,
// DeadlineExceeded 504, anything else 500.
int HttpStatus(absl::StatusCode code);

// The absl code of an error reply the HTTP layer makes itself (an unknown
// route, an oversized or unreadable request).
absl::StatusCode CodeForHttpStatus(int status);

// The body of an error reply for `status`, as JSON text. Messages come
// from delayq and the store; one that is not UTF-8 is sent as its printable
// preview, so JSON carries it.
std::string ErrorBody(const absl::Status& status);

// Writes `status` as the reply: HttpStatus(status.code()) and its body.
// A PermissionDenied is the store refusing this server (its credentials,
// or its user's rights on the store), since the server's own refusals of a
// client are WriteRefusal()'s 403s or Unauthenticated: it is written as
// Unavailable (503) instead, as the server failing, not the client.
void WriteError(HttpResponse& response, const absl::Status& status);

// Writes a refusal the HTTP layer makes with a status of its own (400, 403,
// 413, 415, 431, ...); the body's code is CodeForHttpStatus(http_status).
void WriteRefusal(HttpResponse& response, int http_status,
                  absl::string_view message);

}  // namespace serve
}  // namespace delayq

#endif  // DELAYQ_TOOLS_SERVE_HTTP_ERROR_REPLY_H_
