// Copyright delayq authors.
//
// BackgroundErrors (tools/delayq/background_errors.h): one line per kind of
// call and interval, the count of the others told with the next line.

#include "tools/delayq/background_errors.h"

#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace delayq {
namespace cli {
namespace {

class BackgroundErrorsTest : public ::testing::Test {
 protected:
  void SetUp() override { out_ = open_memstream(&buffer_, &size_); }
  void TearDown() override {
    std::fclose(out_);
    std::free(buffer_);
  }
  std::string Printed() {
    std::fflush(out_);
    return std::string(buffer_, size_);
  }

  char* buffer_ = nullptr;
  size_t size_ = 0;
  FILE* out_ = nullptr;
  const absl::Time t0_ = absl::FromUnixSeconds(1'800'000'000);
};

TEST_F(BackgroundErrorsTest, OneLinePerKindAndInterval) {
  BackgroundErrors errors(absl::Seconds(10), out_);
  const absl::Status down = absl::UnavailableError("redis: connect refused");
  errors.Report("reserve", down, t0_);
  errors.Report("reserve", down, t0_ + absl::Seconds(1));
  errors.Report("reserve", down, t0_ + absl::Seconds(9));
  errors.Report("touch", down, t0_ + absl::Seconds(9));
  EXPECT_EQ(Printed(),
            "delayq: reserve failed, retrying: UNAVAILABLE: redis: connect "
            "refused\n"
            "delayq: touch failed, retrying: UNAVAILABLE: redis: connect "
            "refused\n");
  errors.Report("reserve", down, t0_ + absl::Seconds(10));
  EXPECT_EQ(Printed().substr(Printed().rfind("delayq: reserve")),
            "delayq: reserve failed, retrying: UNAVAILABLE: redis: connect "
            "refused (2 more since the last)\n");
}

}  // namespace
}  // namespace cli
}  // namespace delayq
