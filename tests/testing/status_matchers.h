// Copyright delayq authors.
//
// status_matchers.h — gtest helpers for absl::Status and absl::StatusOr.
// Debian's Abseil ships none, so these are delayq's own.
//
//   EXPECT_OK(scheduler->Ack(lease));
//   EXPECT_THAT(backend->Get("x"), StatusIs(absl::StatusCode::kNotFound));
//   ASSERT_OK_AND_ASSIGN(std::string id, scheduler->Enqueue("t", "p"));

#ifndef DELAYQ_TESTS_TESTING_STATUS_MATCHERS_H_
#define DELAYQ_TESTS_TESTING_STATUS_MATCHERS_H_

#include <ostream>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace delayq {
namespace testing {
namespace internal {

inline const absl::Status& GetStatus(const absl::Status& status) {
  return status;
}

template <typename T>
const absl::Status& GetStatus(const absl::StatusOr<T>& status_or) {
  return status_or.status();
}

}  // namespace internal

// StatusIs(code)
//
// Matches a Status or StatusOr whose code is `code`.
MATCHER_P(StatusIs, code,
          std::string(negation ? "has a code other than " : "has code ") +
              absl::StatusCodeToString(code)) {
  const absl::Status& status = internal::GetStatus(arg);
  *result_listener << "whose status is " << status;
  return status.code() == code;
}

// StatusIs(code, message_matcher)
//
// The same, whose message also matches `message_matcher`.
MATCHER_P2(StatusIs, code, message_matcher,
           std::string(negation ? "has a code other than " : "has code ") +
               absl::StatusCodeToString(code) + " or another message") {
  const absl::Status& status = internal::GetStatus(arg);
  *result_listener << "whose status is " << status;
  return status.code() == code &&
         ::testing::ExplainMatchResult(
             message_matcher, std::string(status.message()), result_listener);
}

// IsOk()
MATCHER(IsOk, negation ? "is not OK" : "is OK") {
  const absl::Status& status = internal::GetStatus(arg);
  *result_listener << "whose status is " << status;
  return status.ok();
}

// IsOkAndHolds(matcher)
//
// Matches an OK StatusOr whose value matches `matcher`.
MATCHER_P(IsOkAndHolds, matcher,
          negation ? "is not OK or holds a value that does not match"
                   : "is OK and holds a matching value") {
  if (!arg.ok()) {
    *result_listener << "whose status is " << arg.status();
    return false;
  }
  return ::testing::ExplainMatchResult(matcher, *arg, result_listener);
}

}  // namespace testing
}  // namespace delayq

#define EXPECT_OK(expr) EXPECT_THAT((expr), ::delayq::testing::IsOk())
#define ASSERT_OK(expr) ASSERT_THAT((expr), ::delayq::testing::IsOk())

#define DELAYQ_CONCAT_INNER_(a, b) a##b
#define DELAYQ_CONCAT_(a, b) DELAYQ_CONCAT_INNER_(a, b)

// ASSERT_OK_AND_ASSIGN(lhs, rexpr)
//
// Evaluates `rexpr` (a StatusOr), fails the test if it is not OK, otherwise
// moves its value into `lhs` (which may be a declaration).
#define ASSERT_OK_AND_ASSIGN(lhs, rexpr) \
  ASSERT_OK_AND_ASSIGN_IMPL_(DELAYQ_CONCAT_(status_or_, __LINE__), lhs, rexpr)
#define ASSERT_OK_AND_ASSIGN_IMPL_(statusor, lhs, rexpr) \
  auto statusor = (rexpr);                               \
  ASSERT_TRUE(statusor.ok()) << statusor.status();       \
  lhs = std::move(statusor).value()

#endif  // DELAYQ_TESTS_TESTING_STATUS_MATCHERS_H_
