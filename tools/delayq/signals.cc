// Copyright delayq authors.

#include "tools/delayq/signals.h"

#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <ctime>

#include "delayq/clock.h"

namespace delayq {
namespace cli {
namespace {

sigset_t StopSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  return set;
}

}  // namespace

void BlockStopSignals() {
  const sigset_t set = StopSignals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

int WaitStopSignal(absl::Duration timeout) {
  const sigset_t set = StopSignals();
  const absl::Time until = RealClock().Now() + timeout;
  for (;;) {
    const timespec ts = absl::ToTimespec(
        std::max(until - RealClock().Now(), absl::ZeroDuration()));
    const int sig = sigtimedwait(&set, nullptr, &ts);
    if (sig > 0) return sig;
    if (errno == EAGAIN) return 0;
    // EINTR: some other signal; keep waiting for the rest of the time.
  }
}

}  // namespace cli
}  // namespace delayq
