// Copyright delayq authors.
//
// Jobs and leases written straight to JSON text read back, through a JSON
// parser, as what was written: every byte a payload may hold escaped as
// JSON wants it, bytes that are not UTF-8 sent as base64, times and the
// default backoff spelled as the API says.

#include "tools/serve/api/json_codec.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace delayq {
namespace serve {
namespace {

Lease MakeLease(std::string payload) {
  Lease lease;
  lease.job.id = "job-1";
  lease.job.topic = "t";
  lease.job.payload = std::move(payload);
  lease.job.state = JobState::kReserved;
  lease.job.attempts = 1;
  lease.job.enqueued_at = absl::FromUnixMillis(1'790'000'000'123);
  lease.job.run_at = lease.job.enqueued_at;
  lease.deadline = lease.job.run_at + absl::Seconds(30);
  lease.job.deadline = lease.deadline;
  lease.token = 18446744073709551615u;
  return lease;
}

Json Written(const Lease& lease) {
  std::string text;
  AppendLeaseJson(lease, &text);
  Json json = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  EXPECT_FALSE(json.is_discarded()) << text;
  return json;
}

TEST(JsonCodecTest, EveryByteOfATextPayloadReadsBack) {
  std::string payload = "plain \"quoted\" back\\slash \n\r\t caf\xc3\xa9 ";
  for (char c = 1; c < 0x20; ++c) payload.push_back(c);
  payload.push_back('\x7f');
  payload += std::string("nul:\0:", 6);
  const Json json = Written(MakeLease(payload));
  EXPECT_EQ(json["job"]["payload"].get<std::string>(), payload);
  EXPECT_FALSE(json["job"].contains("payload_base64"));
}

TEST(JsonCodecTest, BytesThatAreNotUtf8TravelAsBase64) {
  const Json json = Written(MakeLease(std::string("\xff\x00\x01", 3)));
  EXPECT_EQ(json["job"]["payload_base64"].get<std::string>(), "/wAB");
  EXPECT_FALSE(json["job"].contains("payload"));
}

TEST(JsonCodecTest, TimesTokenAndDefaultBackoffAreSpelledOut) {
  Lease lease = MakeLease("p");
  const Json json = Written(lease);
  EXPECT_EQ(json["token"].get<std::string>(), "18446744073709551615");
  EXPECT_EQ(json["job"]["enqueued_at"].get<std::string>(),
            "2026-09-21T14:13:20.123Z");
  EXPECT_EQ(json["deadline"].get<std::string>(), "2026-09-21T14:13:50.123Z");
  EXPECT_EQ(json["job"]["backoff"].get<std::string>(), "exp:1s:10m");

  lease.job.backoff.kind = Backoff::Kind::kFixed;
  lease.job.backoff.base = absl::Seconds(10);
  EXPECT_EQ(Written(lease)["job"]["backoff"].get<std::string>(), "fixed:10s");
}

TEST(JsonCodecTest, DependencyResultsAreAListOnlyWhenThereAreSome) {
  Lease lease = MakeLease("p");
  EXPECT_FALSE(Written(lease).contains("dependency_results"));
  lease.dependency_results["{o}render"] = "page.pdf";
  lease.dependency_results["{o}sign"] = std::string("\xff\x00", 2);
  const Json json = Written(lease);
  ASSERT_EQ(json["dependency_results"].size(), 2u);
  EXPECT_EQ(json["dependency_results"][0]["id"].get<std::string>(),
            "{o}render");
  EXPECT_EQ(json["dependency_results"][0]["result"].get<std::string>(),
            "page.pdf");
  EXPECT_EQ(json["dependency_results"][1]["id"].get<std::string>(), "{o}sign");
  EXPECT_EQ(json["dependency_results"][1]["result_base64"].get<std::string>(),
            "/wA=");
}

TEST(JsonCodecTest, WhatAJobWaitsForIsAListOnlyWhenThereIsSome) {
  Lease lease = MakeLease("p");
  EXPECT_FALSE(Written(lease)["job"].contains("after"));
  lease.job.after = {"{o}sign", "{o}render"};
  Json json = Written(lease);
  ASSERT_EQ(json["job"]["after"].size(), 2u);
  EXPECT_EQ(json["job"]["after"][0].get<std::string>(), "{o}sign");
  EXPECT_EQ(json["job"]["after"][1].get<std::string>(), "{o}render");
  lease.job.after.push_back(std::string("\xff", 1));
  json = Written(lease);
  EXPECT_FALSE(json["job"].contains("after"));
  ASSERT_EQ(json["job"]["after_base64"].size(), 3u);
  EXPECT_EQ(json["job"]["after_base64"][2].get<std::string>(), "/w==");
}

TEST(JsonCodecTest, ABodyNestedTooDeepIsRefusedBeforeItIsParsed) {
  const auto nested = [](int depth) {
    return absl::StrCat("{\"a\":", std::string(depth - 1, '['),
                        std::string(depth - 1, ']'), "}");
  };
  EXPECT_TRUE(ParseBody(nested(kMaxJsonNesting)).ok());
  EXPECT_EQ(ParseBody(nested(kMaxJsonNesting + 1)).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseBody(nested(100000)).status().code(),
            absl::StatusCode::kInvalidArgument);
  // Brackets inside strings, escaped quotes among them, do not count.
  const std::string brackets(1000, '[');
  EXPECT_TRUE(ParseBody(absl::StrCat("{\"a\":\"\\\"", brackets, "\"}")).ok());
  EXPECT_TRUE(JsonNestingWithin(absl::StrCat("\"", brackets, "\""), 0));
  EXPECT_FALSE(JsonNestingWithin("[[", 1));
  EXPECT_TRUE(JsonNestingWithin("[][][]", 1));
}

}  // namespace
}  // namespace serve
}  // namespace delayq
