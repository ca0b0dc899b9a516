// Copyright delayq authors.

#include "src/common/stored_state.h"

namespace delayq {
namespace internal {

JobState StateFromInt(int64_t s) {
  switch (s) {
    case kStateDelayed:
      return JobState::kDelayed;
    case kStateReady:
      return JobState::kReady;
    case kStateReserved:
      return JobState::kReserved;
    case kStateDone:
      return JobState::kDone;
    case kStateWaiting:
      return JobState::kWaiting;
    default:
      return JobState::kDead;
  }
}

int StateToInt(JobState s) {
  switch (s) {
    case JobState::kDelayed:
      return kStateDelayed;
    case JobState::kReady:
      return kStateReady;
    case JobState::kReserved:
      return kStateReserved;
    case JobState::kDead:
      return kStateDead;
    case JobState::kDone:
      return kStateDone;
    case JobState::kWaiting:
      return kStateWaiting;
  }
  return kStateDead;
}

}  // namespace internal
}  // namespace delayq
