// Copyright delayq authors.
//
// DQ_RETURN_IF_ERROR and DQ_ASSIGN_OR_RETURN, the one error-return style of
// the project (Debian's Abseil has no such macros).

#ifndef DELAYQ_SRC_COMMON_STATUS_MACROS_H_
#define DELAYQ_SRC_COMMON_STATUS_MACROS_H_

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define DQ_CONCAT_INNER_(a, b) a##b
#define DQ_CONCAT_(a, b) DQ_CONCAT_INNER_(a, b)

// Returns the status of `expr` from the calling function if it is not OK.
#define DQ_RETURN_IF_ERROR(expr)             \
  do {                                       \
    const absl::Status dq_status_ = (expr);  \
    if (!dq_status_.ok()) return dq_status_; \
  } while (0)

// Evaluates `rexpr` (a StatusOr); returns its status if not OK, otherwise
// moves its value into `lhs` (which may be a declaration).
#define DQ_ASSIGN_OR_RETURN(lhs, rexpr) \
  DQ_ASSIGN_OR_RETURN_IMPL_(DQ_CONCAT_(dq_statusor_, __LINE__), lhs, rexpr)
#define DQ_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, rexpr) \
  auto statusor = (rexpr);                              \
  if (!statusor.ok()) return statusor.status();         \
  lhs = std::move(statusor).value()

#endif  // DELAYQ_SRC_COMMON_STATUS_MACROS_H_
