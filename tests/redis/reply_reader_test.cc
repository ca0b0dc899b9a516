// Copyright delayq authors.
//
// The store's reply parser (backends/redis/client/reply_reader.h): the
// trees it builds are the trees hiredis's own objects would be, however
// the bytes arrive, and an array's header alone allocates nothing.

#include "backends/redis/client/reply_reader.h"

#include <hiredis/hiredis.h>
#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace delayq {
namespace redis_internal {
namespace {

// A reply tree written out, element by element.
std::string Describe(const redisReply* r) {
  switch (r->type) {
    case REDIS_REPLY_ARRAY: {
      std::string out = absl::StrCat("[", r->elements, ":");
      for (size_t i = 0; i < r->elements; ++i) {
        absl::StrAppend(&out, Describe(r->element[i]), ",");
      }
      return out + "]";
    }
    case REDIS_REPLY_INTEGER:
      return absl::StrCat("i", r->integer);
    case REDIS_REPLY_NIL:
      return "nil";
    default:
      return absl::StrCat("t", r->type, "'", std::string(r->str, r->len), "'",
                          r->str[r->len] == '\0' ? "" : "(unterminated)");
  }
}

// RESP bytes of a random tree: every kind of reply, arrays nested up to
// hiredis's depth, some wide; at most about `*budget` replies in all.
void AppendRandomReply(std::mt19937* rng, int depth, int* budget,
                       std::string* out) {
  --*budget;
  const int kind = (*rng)() % (depth < 6 && *budget > 0 ? 7 : 5);
  const auto text = [&] {
    std::string s((*rng)() % 12, 'x');
    for (char& c : s) c = static_cast<char>('a' + (*rng)() % 26);
    return s;
  };
  switch (kind) {
    case 0:
      absl::StrAppend(out, "+", text(), "\r\n");
      return;
    case 1:
      absl::StrAppend(out, "-ERR ", text(), "\r\n");
      return;
    case 2:
      absl::StrAppend(out, ":", static_cast<int32_t>((*rng)()), "\r\n");
      return;
    case 3:
      absl::StrAppend(out, "$-1\r\n");
      return;
    case 4: {
      std::string bulk = text() + std::string(1, '\0') + "\r\n" + text();
      absl::StrAppend(out, "$", bulk.size(), "\r\n", bulk, "\r\n");
      return;
    }
    default: {
      const int n = (*rng)() % 4 == 0 ? (*rng)() % 300 : (*rng)() % 5;
      absl::StrAppend(out, "*", n, "\r\n");
      for (int i = 0; i < n; ++i) {
        AppendRandomReply(rng, depth + 1, budget, out);
      }
    }
  }
}

// Every reply in `bytes`, fed to `reader` in pieces of random sizes.
std::string ReadAll(redisReader* reader, const std::string& bytes,
                    std::mt19937* rng) {
  std::string out;
  size_t at = 0;
  while (at < bytes.size()) {
    const size_t piece = std::min<size_t>(bytes.size() - at, 1 + (*rng)() % 40);
    EXPECT_EQ(redisReaderFeed(reader, bytes.data() + at, piece), REDIS_OK);
    at += piece;
    for (;;) {
      void* reply = nullptr;
      EXPECT_EQ(redisReaderGetReply(reader, &reply), REDIS_OK)
          << reader->errstr;
      if (reply == nullptr) break;
      absl::StrAppend(&out, Describe(static_cast<redisReply*>(reply)), "\n");
      freeReplyObject(reply);
    }
  }
  redisReaderFree(reader);
  return out;
}

TEST(ReplyReaderTest, BuildsTheTreesHiredisBuildsHoweverTheBytesArrive) {
  std::mt19937 rng(20261130);
  for (int round = 0; round < 200; ++round) {
    std::string bytes;
    int budget = 2000;
    for (int i = 0; i < 5; ++i) AppendRandomReply(&rng, 0, &budget, &bytes);
    const std::string want = ReadAll(redisReaderCreate(), bytes, &rng);
    ASSERT_EQ(ReadAll(NewReplyReader(), bytes, &rng), want) << bytes;
  }
}

TEST(ReplyReaderTest, AWideArrayArrivesWhole) {
  std::string bytes = "*100000\r\n";
  std::string want = "[100000:";
  for (int i = 0; i < 100000; ++i) {
    absl::StrAppend(&bytes, ":", i, "\r\n");
    absl::StrAppend(&want, "i", i, ",");
  }
  std::mt19937 rng(7);
  EXPECT_EQ(ReadAll(NewReplyReader(), bytes, &rng), want + "]\n");
}

// A reader given an array's header and a few of its elements, in a child
// process whose address space may grow by 256 MB at most: with the whole
// vector allocated at the header (16 GB for this count) the allocation
// fails, and the reader reports "Out of memory" or the process dies.
void ReadAHeaderAnnouncingTwoBillion(redisReader* (*make)()) {
  FILE* statm = std::fopen("/proc/self/statm", "r");
  unsigned long pages = 0;
  if (statm == nullptr || std::fscanf(statm, "%lu", &pages) != 1) std::exit(2);
  std::fclose(statm);
  const rlim_t limit = pages * 4096 + (rlim_t{256} << 20);
  const rlimit address_space = {limit, limit};
  if (setrlimit(RLIMIT_AS, &address_space) != 0) std::exit(3);
  redisReader* reader = make();
  if (reader == nullptr) std::exit(4);
  const std::string bytes = "*2000000000\r\n:1\r\n$-1\r\n+OK\r\n";
  void* reply = nullptr;
  const bool ok =
      redisReaderFeed(reader, bytes.data(), bytes.size()) == REDIS_OK &&
      redisReaderGetReply(reader, &reply) == REDIS_OK && reply == nullptr;
  std::exit(ok ? 0 : 1);
}

TEST(ReplyReaderDeathTest, AnArraysHeaderAloneAllocatesNothing) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(ReadAHeaderAnnouncingTwoBillion(NewReplyReader),
              testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace redis_internal
}  // namespace delayq
