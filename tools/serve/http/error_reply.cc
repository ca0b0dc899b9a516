// Copyright delayq authors.

#include "tools/serve/http/error_reply.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "tools/common/text.h"

namespace delayq {
namespace serve {

int HttpStatus(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kOk:
      return 200;
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kOutOfRange:
      return 400;
    case absl::StatusCode::kUnauthenticated:
      return 401;
    case absl::StatusCode::kPermissionDenied:
      return 403;
    case absl::StatusCode::kNotFound:
      return 404;
    case absl::StatusCode::kAlreadyExists:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kAborted:
      return 409;
    case absl::StatusCode::kResourceExhausted:
      return 429;
    case absl::StatusCode::kCancelled:
      return 499;
    case absl::StatusCode::kUnimplemented:
      return 501;
    case absl::StatusCode::kUnavailable:
      return 503;
    case absl::StatusCode::kDeadlineExceeded:
      return 504;
    default:
      return 500;
  }
}

absl::StatusCode CodeForHttpStatus(int status) {
  switch (status) {
    case 400:
      return absl::StatusCode::kInvalidArgument;
    case 401:
      return absl::StatusCode::kUnauthenticated;
    case 403:
      return absl::StatusCode::kPermissionDenied;
    case 404:
      return absl::StatusCode::kNotFound;
    case 405:
    case 501:
      return absl::StatusCode::kUnimplemented;
    case 413:  // the body is over the limit: too much of a resource
    case 414:
    case 429:
    case 431:
      return absl::StatusCode::kResourceExhausted;
    case 503:
      return absl::StatusCode::kUnavailable;
    default:
      return status < 500 ? absl::StatusCode::kInvalidArgument
                          : absl::StatusCode::kInternal;
  }
}

namespace {

std::string ErrorBody(absl::StatusCode code, absl::string_view message) {
  const std::string text =
      cli::IsUtf8(message) ? std::string(message) : cli::Preview(message, 1000);
  return absl::StrCat(
      "{\"code\":", cli::JsonQuote(absl::StatusCodeToString(code)),
      ",\"message\":", cli::JsonQuote(text), "}");
}

void Write(HttpResponse& response, int http_status, absl::StatusCode code,
           absl::string_view message) {
  response.status = http_status;
  response.content_type = "application/json";
  response.body = ErrorBody(code, message);
}

}  // namespace

std::string ErrorBody(const absl::Status& status) {
  return ErrorBody(status.code(), status.message());
}

void WriteError(HttpResponse& response, const absl::Status& status) {
  if (absl::IsPermissionDenied(status)) {
    // The store's message names the cause, never a password.
    return Write(
        response, 503, absl::StatusCode::kUnavailable,
        absl::StrCat("the store refused this server: ", status.message()));
  }
  Write(response, HttpStatus(status.code()), status.code(), status.message());
}

void WriteRefusal(HttpResponse& response, int http_status,
                  absl::string_view message) {
  Write(response, http_status, CodeForHttpStatus(http_status), message);
}

}  // namespace serve
}  // namespace delayq
