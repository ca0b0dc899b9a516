// Copyright delayq authors.
//
// A store that cannot hold dependencies refuses them. See
// dependency_conformance.h.

#include <string>

#include "tests/conformance/dependency_conformance.h"
#include "tests/testing/status_matchers.h"

namespace delayq {
namespace testing {
namespace {

TEST_P(DependencyRefusalTest, AJobWithDependenciesIsRefusedAndNothingStored) {
  const std::string topic = Topic();
  AddOne(MakeJob("{f}dep", topic));
  NewJob waiter = MakeJob("{f}waiter", topic);
  waiter.after = {"{f}dep"};
  const absl::Status added =
      backend_->Add({MakeJob("{f}other", topic), waiter}, kT0);
  EXPECT_EQ(added.code(), absl::StatusCode::kUnimplemented) << added;
  EXPECT_NE(added.message().find(backend_->Name()), absl::string_view::npos)
      << added;
  EXPECT_EQ(backend_->Get("{f}waiter").status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(backend_->Get("{f}other").status().code(),
            absl::StatusCode::kNotFound);
  ASSERT_OK_AND_ASSIGN(TopicStats stats, backend_->Stats(topic));
  EXPECT_EQ(stats.total(), 1);
  EXPECT_EQ(stats.waiting, 0);
}

}  // namespace
}  // namespace testing
}  // namespace delayq
