// Copyright delayq authors.

#include "tools/serve/api/path_pattern.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace delayq {
namespace serve {
namespace {

using Captures = std::vector<std::string>;

Captures MatchOf(const std::string& pattern, const std::string& path) {
  Captures captures = {"stale"};
  if (!PathPattern(pattern).Match(path, &captures)) return {"no match"};
  return captures;
}

TEST(PathPatternTest, MatchesLiteralPathsWhole) {
  EXPECT_EQ(MatchOf("/v1/topics", "/v1/topics"), Captures{});
  EXPECT_EQ(MatchOf("/v1/topics", "/v1/topics/"), Captures{"no match"});
  EXPECT_EQ(MatchOf("/v1/topics", "/v1/topic"), Captures{"no match"});
  // A dot is a dot, not any character.
  EXPECT_EQ(MatchOf("/ui/app.js", "/ui/appxjs"), Captures{"no match"});
  EXPECT_EQ(MatchOf("/ui/app.js", "/ui/app.js"), Captures{});
}

TEST(PathPatternTest, ASegmentIsOneNonEmptySegment) {
  const std::string pattern = "/v1/topics/([^/]+)/jobs";
  EXPECT_EQ(MatchOf(pattern, "/v1/topics/orders/jobs"), Captures{"orders"});
  EXPECT_EQ(MatchOf(pattern, "/v1/topics//jobs"), Captures{"no match"});
  EXPECT_EQ(MatchOf(pattern, "/v1/topics/a/b/jobs"), Captures{"no match"});
  EXPECT_EQ(MatchOf("/v1/topics/([^/]+)", "/v1/topics/t"), Captures{"t"});
  EXPECT_EQ(MatchOf("/v1/topics/([^/]+)", "/v1/topics/t/"),
            Captures{"no match"});
}

TEST(PathPatternTest, AnyTextTakesSlashesAndTheLongestThatFits) {
  const std::string pattern = "/v1/jobs/(.+)/ack";
  EXPECT_EQ(MatchOf(pattern, "/v1/jobs/a/b/ack"), Captures{"a/b"});
  EXPECT_EQ(MatchOf(pattern, "/v1/jobs/x/ack/ack"), Captures{"x/ack"});
  EXPECT_EQ(MatchOf(pattern, "/v1/jobs///ack"), Captures{"/"});
  EXPECT_EQ(MatchOf(pattern, "/v1/jobs//ack"), Captures{"no match"});
  EXPECT_EQ(MatchOf(pattern, "/v1/jobs/ack"), Captures{"no match"});
  EXPECT_EQ(MatchOf("/v1/jobs/(.+)", "/v1/jobs/"), Captures{"no match"});
  EXPECT_EQ(MatchOf("/a/([^/]+)/b/(.+)", "/a/x/b/y/z"), (Captures{"x", "y/z"}));
  // Not across a line's end, as std::regex's '.' did not.
  EXPECT_EQ(MatchOf("/v1/jobs/(.+)", "/v1/jobs/a\nb"), Captures{"no match"});
  EXPECT_EQ(MatchOf("/v1/jobs/(.+)", "/v1/jobs/a\r"), Captures{"no match"});
}

// std::regex recursed once a character and overflowed a connection
// thread's stack at some 900 bytes; this matcher does not recurse on text.
TEST(PathPatternTest, AVeryLongPathCostsNoStack) {
  const std::string id(1'000'000, 'a');
  EXPECT_EQ(MatchOf("/v1/jobs/(.+)/ack", "/v1/jobs/" + id + "/ack"),
            Captures{id});
  EXPECT_EQ(MatchOf("/v1/jobs/(.+)/ack", "/v1/jobs/" + id + "/nak"),
            Captures{"no match"});
}

}  // namespace
}  // namespace serve
}  // namespace delayq
