// Copyright delayq authors.
//
// SIGINT and SIGTERM as events a loop waits for, instead of handlers.

#ifndef DELAYQ_TOOLS_DELAYQ_SIGNALS_H_
#define DELAYQ_TOOLS_DELAYQ_SIGNALS_H_

#include "absl/time/time.h"

namespace delayq {
namespace cli {

// Blocks SIGINT and SIGTERM in the calling thread and in every thread it
// starts afterwards, so only WaitStopSignal() sees them. Call it before
// starting threads.
void BlockStopSignals();

// Waits up to `timeout` for SIGINT or SIGTERM. Returns the signal, or 0 when
// the time passed.
int WaitStopSignal(absl::Duration timeout);

}  // namespace cli
}  // namespace delayq

#endif  // DELAYQ_TOOLS_DELAYQ_SIGNALS_H_
