// Copyright delayq authors.

#include "src/common/validation.h"

#include <algorithm>
#include <utility>

#include "absl/base/attributes.h"
#include "absl/base/optimization.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"

namespace delayq {
namespace internal {
namespace {

bool IsTopicChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') || c == '.' || c == '_' || c == ':' || c == '-';
}

// The error for a duration outside `min`..kLongestDuration; built out of
// line, so that a check that passes (every enqueue makes several) is a
// comparison and nothing more.
ABSL_ATTRIBUTE_NOINLINE absl::Status DurationError(absl::Duration d,
                                                   absl::string_view what,
                                                   absl::Duration min) {
  return absl::InvalidArgumentError(
      absl::StrCat(what, " must be from ", absl::FormatDuration(min), " to ",
                   absl::FormatDuration(kLongestDuration), ", got ",
                   absl::FormatDuration(d)));
}

// OK for `min` <= d <= kLongestDuration.
inline absl::Status ValidateDuration(absl::Duration d, absl::string_view what,
                                     absl::Duration min) {
  if (ABSL_PREDICT_FALSE(d < min || d > kLongestDuration)) {
    return DurationError(d, what, min);
  }
  return absl::OkStatus();
}

// OK for `after` as JobOptions describes it; the job's own id is `id`.
absl::Status ValidateDependencies(const JobOptions& options) {
  if (options.after.empty()) return absl::OkStatus();
  if (options.after.size() > static_cast<size_t>(kMaxDependencies)) {
    return absl::InvalidArgumentError(
        absl::StrCat("a job may wait for at most ", kMaxDependencies,
                     " jobs, got ", options.after.size()));
  }
  if (options.replace) {
    return absl::InvalidArgumentError(
        "replace cannot give a job dependencies: enqueue it anew");
  }
  absl::flat_hash_set<absl::string_view> seen;
  for (const std::string& dependency : options.after) {
    if (dependency.empty()) {
      return absl::InvalidArgumentError("after names an empty job id");
    }
    if (absl::Status s = ValidateId(dependency); !s.ok()) return s;
    if (dependency == options.id) {
      return absl::InvalidArgumentError(
          absl::StrCat("job '", dependency, "' cannot wait for itself"));
    }
    if (!seen.insert(dependency).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("after names job '", dependency, "' twice"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::string_view Utf8Prefix(absl::string_view text, size_t max_bytes) {
  if (text.size() <= max_bytes) return text;
  size_t cut = max_bytes;
  // Back to the first byte of the sequence the cut would split.
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) {
    --cut;
  }
  return text.substr(0, cut);
}

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
  // Ids go into logs, terminals and a command's environment, where a
  // control byte would forge a line, move the cursor or cut the id short.
  for (size_t i = 0; i < id.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(id[i]);
    if (c < 0x20 || c == 0x7f) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "job id \"%s\" has the control byte %s at offset %d",
          absl::CHexEscape(id), absl::CHexEscape(id.substr(i, 1)), i));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateOptions(const JobOptions& options) {
  if (absl::Status s = ValidateId(options.id); !s.ok()) return s;
  if (options.replace && options.id.empty()) {
    return absl::InvalidArgumentError(
        "replace needs an id: it replaces the job that has it");
  }
  if (options.delay < absl::ZeroDuration() ||
      options.delay == absl::InfiniteDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat("delay must be finite and not negative, got ",
                     absl::FormatDuration(options.delay)));
  }
  if (options.run_at != absl::InfinitePast()) {
    if (absl::Status s = ValidateRunAt(options.run_at, "run_at"); !s.ok()) {
      return s;
    }
  }
  if (absl::Status s =
          ValidateDuration(options.ttr, "ttr", absl::Microseconds(1));
      !s.ok()) {
    return s;
  }
  if (options.max_attempts < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "max_attempts must be at least 1, got ", options.max_attempts));
  }
  if (absl::Status s = ValidateDuration(options.backoff.base, "backoff base",
                                        absl::ZeroDuration());
      !s.ok()) {
    return s;
  }
  if (absl::Status s = ValidateDuration(options.backoff.max, "backoff max",
                                        absl::ZeroDuration());
      !s.ok()) {
    return s;
  }
  // Written so that NaN fails too.
  if (!(options.backoff.jitter >= 0.0 && options.backoff.jitter <= 1.0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "backoff jitter must be from 0 to 1, got ", options.backoff.jitter));
  }
  if (options.unique_for != absl::ZeroDuration()) {
    if (options.id.empty()) {
      return absl::InvalidArgumentError(
          "unique_for needs an id: it keeps that id taken");
    }
    if (absl::Status s = ValidateDuration(options.unique_for, "unique_for",
                                          absl::ZeroDuration());
        !s.ok()) {
      return s;
    }
  }
  if (options.expire_after < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat("expire_after must not be negative, got ",
                     absl::FormatDuration(options.expire_after)));
  }
  if (absl::Status s =
          ValidateDuration(options.keep_for, "keep_for", absl::ZeroDuration());
      !s.ok()) {
    return s;
  }
  if (options.keep_at_most < 0 || options.keep_at_most > kMaxDonePerTopic) {
    return absl::InvalidArgumentError(
        absl::StrCat("keep_at_most must be from 0 to ", kMaxDonePerTopic,
                     ", got ", options.keep_at_most));
  }
  if (!options.batch.empty()) {
    if (absl::Status s = ValidateId(options.batch); !s.ok()) return s;
    if (options.replace) {
      return absl::InvalidArgumentError(
          "replace cannot put a job in a batch: enqueue it anew");
    }
  }
  return ValidateDependencies(options);
}

absl::Status ValidateLimit(const TopicLimit& limit) {
  if (limit.rate < 0 || limit.concurrency < 0) {
    return absl::InvalidArgumentError(
        "a topic limit's rate and concurrency must not be negative");
  }
  if (limit.rate == 0 && limit.concurrency == 0) {
    return absl::InvalidArgumentError(
        "a topic limit needs a rate or a concurrency (to remove a limit, "
        "clear it)");
  }
  if (limit.burst < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a topic limit's burst must be at least 1, got ", limit.burst));
  }
  return ValidateDuration(limit.period, "a topic limit's period",
                          absl::Microseconds(1));
}

absl::StatusOr<absl::Time> ResolveExpiry(const JobOptions& options,
                                         absl::Time now, absl::Time run_at) {
  absl::Time at = options.expire_at;
  if (options.expire_after != absl::InfiniteDuration()) {
    at = std::min(at, now + options.expire_after);
  }
  if (at == absl::InfiniteFuture()) return at;
  if (absl::Status s = ValidateRunAt(at, "expire_at"); !s.ok()) return s;
  if (at <= run_at) {
    return absl::InvalidArgumentError(
        absl::StrCat("expire_at ", absl::FormatTime(at, absl::UTCTimeZone()),
                     " is not after the job's due time ",
                     absl::FormatTime(run_at, absl::UTCTimeZone()),
                     ": the job could never run"));
  }
  return at;
}

absl::Status ValidateRunAt(absl::Time at, absl::string_view what) {
  if (at < absl::UnixEpoch() || at > kLatestRunAt) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, " ", absl::FormatTime(at, absl::UTCTimeZone()),
        " is outside what every store keeps exactly (",
        absl::FormatTime(absl::UnixEpoch(), absl::UTCTimeZone()), " to ",
        absl::FormatTime(kLatestRunAt, absl::UTCTimeZone()), ")"));
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
