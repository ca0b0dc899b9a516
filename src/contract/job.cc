// Copyright delayq authors.

#include "delayq/job.h"

#include <algorithm>

namespace delayq {

bool IsFinished(JobState state) {
  return state == JobState::kDone || state == JobState::kDead;
}

absl::string_view JobStateName(JobState state) {
  switch (state) {
    case JobState::kDelayed:
      return "delayed";
    case JobState::kReady:
      return "ready";
    case JobState::kReserved:
      return "reserved";
    case JobState::kDead:
      return "dead";
    case JobState::kDone:
      return "done";
    case JobState::kWaiting:
      return "waiting";
  }
  return "unknown";
}

bool ParseJobState(absl::string_view text, JobState* state) {
  for (JobState s : {JobState::kDelayed, JobState::kReady, JobState::kReserved,
                     JobState::kDead, JobState::kDone, JobState::kWaiting}) {
    if (text == JobStateName(s)) {
      *state = s;
      return true;
    }
  }
  return false;
}

absl::string_view DependencyFailureName(DependencyFailure policy) {
  switch (policy) {
    case DependencyFailure::kFail:
      return "fail";
    case DependencyFailure::kCancel:
      return "cancel";
    case DependencyFailure::kRun:
      return "run";
  }
  return "unknown";
}

bool ParseDependencyFailure(absl::string_view text, DependencyFailure* policy) {
  for (DependencyFailure p :
       {DependencyFailure::kFail, DependencyFailure::kCancel,
        DependencyFailure::kRun}) {
    if (text == DependencyFailureName(p)) {
      *policy = p;
      return true;
    }
  }
  return false;
}

Backoff Backoff::Fixed(absl::Duration delay) {
  Backoff b;
  b.kind = Kind::kFixed;
  b.base = delay;
  b.max = delay;
  return b;
}

Backoff Backoff::Exponential(absl::Duration base, absl::Duration max) {
  Backoff b;
  b.kind = Kind::kExponential;
  b.base = base;
  b.max = max;
  return b;
}

Backoff Backoff::WithJitter(double fraction) const {
  Backoff b = *this;
  b.jitter = fraction;
  return b;
}

absl::Duration Backoff::Jittered(int attempt, double unit) const {
  const absl::Duration d = Delay(attempt);
  const double f = std::clamp(jitter, 0.0, 1.0) * std::clamp(unit, 0.0, 1.0);
  // Never below zero, never above the delay, whatever rounding does.
  return std::clamp(d - d * f, absl::ZeroDuration(), d);
}

absl::Duration Backoff::Delay(int attempt) const {
  absl::Duration d = std::max(base, absl::ZeroDuration());
  if (kind == Kind::kFixed) return d;
  const absl::Duration cap = std::max(max, absl::ZeroDuration());
  // Doubling past the cap is pointless; stopping there also avoids overflow.
  for (int i = 1; i < attempt && d < cap; ++i) d *= 2;
  return std::min(d, cap);
}

bool operator==(const Backoff& a, const Backoff& b) {
  return a.kind == b.kind && a.base == b.base && a.max == b.max &&
         a.jitter == b.jitter;
}

}  // namespace delayq
