// Copyright delayq authors.
//
// The form of generated job ids: what the scheduler writes is what
// ParseGeneratedId() reads back, and nothing else is read as one.

#include "src/common/generated_id.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/time/time.h"
#include "delayq/delayq.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace delayq {
namespace internal {
namespace {

TEST(GeneratedIdTest, ReadsBackWhatItWrites) {
  for (uint64_t serial :
       {uint64_t{1}, uint64_t{9}, uint64_t{10}, uint64_t{1'000'000},
        uint64_t{9'999'999'999'999'999'999u}}) {
    const std::string id = GeneratedId("5f3a9c01b2d4", serial);
    std::optional<GeneratedIdParts> parts = ParseGeneratedId(id);
    ASSERT_TRUE(parts.has_value()) << id;
    EXPECT_EQ(parts->prefix, 0x5f3a9c01b2d4u) << id;
    EXPECT_EQ(parts->serial, serial) << id;
  }
}

TEST(GeneratedIdTest, NewPrefixesAreTwelveLowercaseHexDigits) {
  for (int i = 0; i < 100; ++i) {
    const std::string prefix = NewGeneratedIdPrefix();
    ASSERT_EQ(prefix.size(), 12u) << prefix;
    ASSERT_TRUE(ParseGeneratedId(GeneratedId(prefix, 7)).has_value()) << prefix;
  }
}

// Exactly one id has each (prefix, serial): anything else is not generated.
TEST(GeneratedIdTest, OtherIdsAreNotReadAsGenerated) {
  for (const char* id : {
           "",
           "order-17",
           "5f3a9c01b2d4",                       // no serial
           "5f3a9c01b2d4-",                      // empty serial
           "5f3a9c01b2d4-0",                     // serials count from 1
           "5f3a9c01b2d4-07",                    // a leading zero
           "5F3A9C01B2D4-7",                     // uppercase hex
           "5f3a9c01b2d-7",                      // eleven digits
           "5f3a9c01b2d45-7",                    // thirteen digits
           "5f3a9c01b2g4-7",                     // not hex
           "5f3a9c01b2d4_7",                     // another separator
           "5f3a9c01b2d4-7x",                    // not a number
           "5f3a9c01b2d4-+7",                    // a sign
           "5f3a9c01b2d4-12345678901234567890",  // twenty digits
           "5f3a9c01b2d4-7a",                    // hex in the serial
           "5f3a9c01b2d4-a",                     // a serial of hex only
           "5f3a9c01b2:4-7",                     // the byte after '9'
           "5f3a9c01b2d4-7:",                    // the same in the serial
           "`f3a9c01b2d4-7",                     // the byte before 'a'
           "5f3a9c01b2d4-7/",                    // the byte before '0'
       }) {
    EXPECT_FALSE(ParseGeneratedId(id).has_value()) << id;
  }
  // Bytes outside ASCII, which a signed char would index below the table.
  EXPECT_FALSE(ParseGeneratedId("5f3a9c01b2d4-7\xe9").has_value());
  EXPECT_FALSE(ParseGeneratedId("\xff"
                                "f3a9c01b2d4-7")
                   .has_value());
}

TEST(GeneratedIdTest, TheSchedulerWritesThem) {
  SimulatedClock clock(absl::FromUnixSeconds(1'800'000'000));
  SchedulerOptions options;
  options.clock = &clock;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Scheduler> scheduler,
                       Scheduler::Create(NewMemoryBackend(), options));
  ASSERT_OK_AND_ASSIGN(std::string first, scheduler->Enqueue("t", "p"));
  ASSERT_OK_AND_ASSIGN(std::string second, scheduler->Enqueue("t", "p"));
  std::optional<GeneratedIdParts> a = ParseGeneratedId(first);
  std::optional<GeneratedIdParts> b = ParseGeneratedId(second);
  ASSERT_TRUE(a.has_value()) << first;
  ASSERT_TRUE(b.has_value()) << second;
  EXPECT_EQ(a->prefix, b->prefix);
  EXPECT_EQ(b->serial, a->serial + 1);
}

}  // namespace
}  // namespace internal
}  // namespace delayq
