// Copyright delayq authors.
//
// How an absl::Status becomes an HTTP reply: the status code that matches
// the absl code, and a JSON body {"code": "NOT_FOUND", "message": "..."}.

#ifndef DELAYQ_TOOLS_SERVE_HTTP_STATUS_H_
#define DELAYQ_TOOLS_SERVE_HTTP_STATUS_H_

#include "absl/status/status.h"
#include "tools/serve/http_message.h"
#include "tools/serve/json_codec.h"

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

void WriteJson(HttpResponse& response, int status, const Json& body);
void WriteError(HttpResponse& response, const absl::Status& status);

}  // namespace serve
}  // namespace delayq

#endif  // DELAYQ_TOOLS_SERVE_HTTP_STATUS_H_
