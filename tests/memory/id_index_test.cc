// Copyright delayq authors.
//
// IdIndex: unit tests of its two homes for ids (pages of generated serials,
// a hash set for the rest), and a randomized run against a reference model
// (a std::map from id to record). The seed is printed; set
// DELAYQ_ID_INDEX_SEED to replay one run.

#include "backends/memory/id_index.h"

#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <iterator>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "delayq/backend.h"
#include "gtest/gtest.h"
#include "src/common/generated_id.h"

namespace delayq {
namespace memory_internal {
namespace {

using internal::GeneratedId;

JobRecord::Ptr MakeRecord(absl::string_view id, absl::string_view payload) {
  NewJob job;
  job.id = std::string(id);
  job.payload = std::string(payload);
  return JobRecord::Make(job, /*topic=*/nullptr, /*seq=*/1,
                         absl::FromUnixSeconds(1'800'000'000));
}

// Emplaces a record with `id`; the record, or null when the id was taken.
JobRecord* Add(IdIndex& index, absl::string_view id,
               absl::string_view payload = "p") {
  return index.Emplace(id, [&] { return MakeRecord(id, payload); });
}

TEST(IdIndexTest, FindsGeneratedAndOtherIds) {
  IdIndex index;
  const std::string generated = GeneratedId("5f3a9c01b2d4", 130);
  JobRecord* a = Add(index, generated);
  JobRecord* b = Add(index, "order-17");
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(index.size(), 2u);
  EXPECT_EQ(index.Find(generated), a);
  EXPECT_EQ(index.Find("order-17"), b);
  EXPECT_EQ(index.Find(GeneratedId("5f3a9c01b2d4", 131)), nullptr);
  EXPECT_EQ(index.Find(GeneratedId("5f3a9c01b2d5", 130)), nullptr);
  EXPECT_EQ(index.Find("5f3a9c01b2d4-0130"), nullptr);  // not the same id
  EXPECT_EQ(index.Find("order-18"), nullptr);
}

TEST(IdIndexTest, ATakenIdMakesNoRecord) {
  IdIndex index;
  for (const std::string& id :
       {GeneratedId("000000000001", 5), std::string("reminder:42")}) {
    ASSERT_NE(Add(index, id), nullptr);
    bool made = false;
    EXPECT_EQ(index.Emplace(id,
                            [&] {
                              made = true;
                              return MakeRecord(id, "again");
                            }),
              nullptr);
    EXPECT_FALSE(made) << id;
  }
  EXPECT_EQ(index.size(), 2u);
}

TEST(IdIndexTest, APageKeepsItsOtherSerialsThroughErases) {
  IdIndex index;
  std::vector<JobRecord*> records;
  // Two pages' worth, added out of order.
  for (uint64_t serial = 1; serial <= 128; ++serial) {
    const uint64_t shuffled = (serial * 37) % 128 + 1;
    records.push_back(Add(index, GeneratedId("abcdefabcdef", shuffled)));
  }
  // Erase every serial but the multiples of 5, which must stay found as
  // their page shrinks around them.
  for (JobRecord* r : records) {
    const uint64_t serial = internal::ParseGeneratedId(r->id())->serial;
    if (serial % 5 != 0) index.Erase(r);
  }
  EXPECT_EQ(index.size(), 25u);
  for (uint64_t serial = 1; serial <= 128; ++serial) {
    JobRecord* r = index.Find(GeneratedId("abcdefabcdef", serial));
    if (serial % 5 == 0) {
      ASSERT_NE(r, nullptr) << serial;
      EXPECT_EQ(r->id(), GeneratedId("abcdefabcdef", serial));
    } else {
      EXPECT_EQ(r, nullptr) << serial;
    }
  }
}

TEST(IdIndexTest, ReplacePutsTheNewRecordInTheOldOnesPlace) {
  IdIndex index;
  for (const std::string& id :
       {GeneratedId("5f3a9c01b2d4", 64), std::string("debounce:7")}) {
    JobRecord* old = Add(index, id, "old");
    JobRecord::Ptr fresh = old->WithPayload("new");
    JobRecord* raw = fresh.get();
    index.Replace(old, std::move(fresh));
    EXPECT_EQ(index.Find(id), raw) << id;
    EXPECT_EQ(index.Find(id)->payload(), "new") << id;
  }
  EXPECT_EQ(index.size(), 2u);
}

// --- Against the reference model ----------------------------------------

class IdIndexModelRun {
 public:
  explicit IdIndexModelRun(uint64_t seed) : rng_(seed) {}

  void Run(int ops) {
    for (int op = 0; op < ops && !::testing::Test::HasFailure(); ++op) {
      const int dice = Uniform(0, 99);
      if (dice < 50) {
        Add();
      } else if (dice < 75) {
        EraseAny();
      } else if (dice < 85) {
        ReplaceAny();
      } else {
        const std::string id = DrawId();
        auto it = model_.find(id);
        ASSERT_EQ(index_.Find(id), it == model_.end() ? nullptr : it->second)
            << id;
      }
      ASSERT_EQ(index_.size(), model_.size());
    }
    for (const auto& [id, record] : model_) {
      ASSERT_EQ(index_.Find(id), record) << id;
    }
  }

 private:
  int64_t Uniform(int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng_);
  }

  // Generated ids of two prefixes with serials close together (pages fill
  // and empty), ids that are nearly generated, and plain ones.
  std::string DrawId() {
    switch (Uniform(0, 4)) {
      case 0:
      case 1:
        return GeneratedId(Uniform(0, 1) ? "5f3a9c01b2d4" : "000000000000",
                           Uniform(1, 300));
      case 2:
        return absl::StrCat("5f3a9c01b2d4-0", Uniform(1, 20));
      case 3:
        return absl::StrCat("5F3A9C01B2D4-", Uniform(1, 20));
      default:
        return absl::StrCat("order-", Uniform(0, 100));
    }
  }

  void Add() {
    const std::string id = DrawId();
    JobRecord* added = ::delayq::memory_internal::Add(index_, id);
    auto [it, fresh] = model_.try_emplace(id, added);
    ASSERT_EQ(added != nullptr, fresh) << id;
  }

  void EraseAny() {
    if (model_.empty()) return;
    auto it = std::next(model_.begin(), Uniform(0, model_.size() - 1));
    index_.Erase(it->second);
    model_.erase(it);
  }

  void ReplaceAny() {
    if (model_.empty()) return;
    auto it = std::next(model_.begin(), Uniform(0, model_.size() - 1));
    JobRecord::Ptr fresh = it->second->WithPayload("replaced");
    JobRecord* raw = fresh.get();
    index_.Replace(it->second, std::move(fresh));
    it->second = raw;
  }

  std::mt19937_64 rng_;
  IdIndex index_;
  std::map<std::string, JobRecord*> model_;
};

TEST(IdIndexPropertyTest, AgreesWithAMap) {
  uint64_t seed = std::random_device{}();
  if (const char* fixed = std::getenv("DELAYQ_ID_INDEX_SEED")) {
    seed = std::strtoull(fixed, nullptr, 10);
  }
  std::cout << "DELAYQ_ID_INDEX_SEED=" << seed << "\n";
  for (int run = 0; run < 20 && !HasFailure(); ++run) {
    IdIndexModelRun(seed + run).Run(5000);
  }
}

}  // namespace
}  // namespace memory_internal
}  // namespace delayq
