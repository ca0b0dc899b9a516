// Copyright delayq authors.
//
// A store that cannot keep batches refuses them. See batch_conformance.h.

#include <string>

#include "tests/conformance/batch_conformance.h"
#include "tests/testing/status_matchers.h"

namespace delayq {
namespace testing {
namespace {

void ExpectRefused(const absl::Status& status, const Backend& backend) {
  EXPECT_EQ(status.code(), absl::StatusCode::kUnimplemented) << status;
  EXPECT_NE(status.message().find(backend.Name()), absl::string_view::npos)
      << status;
}

TEST_P(BatchRefusalTest, OpenCloseAndGetAreRefusedAndNothingStored) {
  const std::string topic = Topic();
  ExpectRefused(backend_->OpenBatch(MakeJob("{b}batch", topic), kT0),
                *backend_);
  EXPECT_EQ(backend_->Get("{b}batch").status().code(),
            absl::StatusCode::kNotFound);
  ExpectRefused(backend_->CloseBatch("{b}batch", kT0), *backend_);
  ExpectRefused(backend_->GetBatch("{b}batch").status(), *backend_);
}

TEST_P(BatchRefusalTest, AJobOfABatchIsRefusedAndNothingStored) {
  const std::string topic = Topic();
  NewJob member = MakeJob("{b}member", topic);
  member.batch = "{b}batch";
  ExpectRefused(backend_->Add({MakeJob("{b}other", topic), member}, kT0),
                *backend_);
  EXPECT_EQ(backend_->Get("{b}member").status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(backend_->Get("{b}other").status().code(),
            absl::StatusCode::kNotFound);
  ASSERT_OK_AND_ASSIGN(TopicStats stats, backend_->Stats(topic));
  EXPECT_EQ(stats.total(), 0);
}

}  // namespace
}  // namespace testing
}  // namespace delayq
