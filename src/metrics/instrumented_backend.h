// Copyright delayq authors.
//
// A Backend that forwards every call to another and reports each call's
// name, duration and status to an observer: how Metrics times a store.

#ifndef DELAYQ_SRC_METRICS_INSTRUMENTED_BACKEND_H_
#define DELAYQ_SRC_METRICS_INSTRUMENTED_BACKEND_H_

#include <functional>
#include <memory>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "delayq/backend.h"
#include "delayq/clock.h"

namespace delayq {
namespace internal {

using CallObserver = std::function<void(
    absl::string_view call, absl::Duration took, const absl::Status& status)>;

// `clock` and `observer` must outlive the returned backend.
std::unique_ptr<Backend> InstrumentBackend(std::unique_ptr<Backend> backend,
                                           Clock& clock, CallObserver observer);

}  // namespace internal
}  // namespace delayq

#endif  // DELAYQ_SRC_METRICS_INSTRUMENTED_BACKEND_H_
