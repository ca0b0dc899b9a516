// Copyright delayq authors.

#include "src/validation.h"

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace delayq {
namespace internal {
namespace {

bool IsTopicChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') || c == '.' || c == '_' || c == ':' || c == '-';
}

}  // namespace

absl::Status ValidateTopic(absl::string_view topic) {
  if (topic.empty()) return absl::InvalidArgumentError("topic is empty");
  if (topic.size() > kMaxTopicBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "topic is ", topic.size(), " bytes; the limit is ", kMaxTopicBytes));
  }
  for (char c : topic) {
    if (!IsTopicChar(c)) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "topic \"%s\" has the character %s; topics use [A-Za-z0-9._:-]",
          absl::CHexEscape(topic), absl::CHexEscape(absl::string_view(&c, 1))));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateId(absl::string_view id) {
  if (id.size() > kMaxIdBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "job id is ", id.size(), " bytes; the limit is ", kMaxIdBytes));
  }
  return absl::OkStatus();
}

absl::Status ValidateOptions(const JobOptions& options) {
  if (absl::Status s = ValidateId(options.id); !s.ok()) return s;
  if (options.delay < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "delay is negative (", absl::FormatDuration(options.delay), ")"));
  }
  if (options.ttr <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "ttr must be positive, got ", absl::FormatDuration(options.ttr)));
  }
  if (options.max_attempts < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "max_attempts must be at least 1, got ", options.max_attempts));
  }
  if (options.backoff.base < absl::ZeroDuration() ||
      options.backoff.max < absl::ZeroDuration()) {
    return absl::InvalidArgumentError("backoff durations must not be negative");
  }
  return absl::OkStatus();
}

absl::Status ValidatePayload(absl::string_view payload, size_t max_bytes) {
  if (payload.size() > max_bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("payload is ", payload.size(), " bytes; the limit is ",
                     max_bytes, " (SchedulerOptions::max_payload_bytes)"));
  }
  return absl::OkStatus();
}

}  // namespace internal
}  // namespace delayq
