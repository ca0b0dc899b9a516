// Copyright delayq authors.

#include "delayq/schedule.h"

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace delayq {

bool operator==(const MissedPolicy& a, const MissedPolicy& b) {
  return a.kind == b.kind && a.Runs() == b.Runs();
}

std::string MissedPolicyName(const MissedPolicy& policy) {
  switch (policy.kind) {
    case MissedPolicy::Kind::kSkip:
      return "skip";
    case MissedPolicy::Kind::kOnce:
      return "once";
    case MissedPolicy::Kind::kAll:
      break;
  }
  return absl::StrCat("all:", policy.max);
}

bool ParseMissedPolicy(absl::string_view text, MissedPolicy* policy) {
  if (text == "skip") {
    *policy = MissedPolicy::Skip();
    return true;
  }
  if (text == "once") {
    *policy = MissedPolicy::Once();
    return true;
  }
  int max = 0;
  if (!absl::ConsumePrefix(&text, "all:") || !absl::SimpleAtoi(text, &max) ||
      max < 1 || max > kMaxMissedRuns) {
    return false;
  }
  *policy = MissedPolicy::All(max);
  return true;
}

}  // namespace delayq
