// Copyright delayq authors.

#include "backends/memory/id_index.h"

#include <algorithm>
#include <cstring>
#include <optional>

#include "absl/hash/hash.h"
#include "absl/numeric/bits.h"
#include "src/common/generated_id.h"

namespace delayq {
namespace memory_internal {
namespace {

constexpr int kMinPageCapacity = 4;

}  // namespace

// --- Page ------------------------------------------------------------------

int IdIndex::Page::Rank(int bit) const {
  return absl::popcount(occupied_ & ((uint64_t{1} << bit) - 1));
}

int IdIndex::Page::size() const { return absl::popcount(occupied_); }

JobRecord** IdIndex::Page::Find(int bit) const {
  if ((occupied_ >> bit & 1) == 0) return nullptr;
  return &slots_[Rank(bit)];
}

void IdIndex::Page::Insert(int bit, JobRecord* r) {
  const int n = size();
  if (n == capacity_) Resize(std::max(kMinPageCapacity, 2 * capacity_));
  const int rank = Rank(bit);
  std::memmove(&slots_[rank + 1], &slots_[rank],
               (n - rank) * sizeof(JobRecord*));
  slots_[rank] = r;
  occupied_ |= uint64_t{1} << bit;
}

void IdIndex::Page::Erase(int bit) {
  const int rank = Rank(bit);
  const int n = size();
  std::memmove(&slots_[rank], &slots_[rank + 1],
               (n - rank - 1) * sizeof(JobRecord*));
  occupied_ &= ~(uint64_t{1} << bit);
  if (capacity_ > kMinPageCapacity && n - 1 <= capacity_ / 4) {
    Resize(capacity_ / 2);
  }
}

void IdIndex::Page::Resize(int capacity) {
  JobRecord** slots = new JobRecord*[capacity];
  if (slots_ != nullptr)
    std::memcpy(slots, slots_, size() * sizeof(JobRecord*));
  delete[] slots_;
  slots_ = slots;
  capacity_ = capacity;
}

// --- IdIndex ---------------------------------------------------------------

size_t IdIndex::IdHash::operator()(absl::string_view id) const {
  return absl::Hash<absl::string_view>{}(id);
}

IdIndex::~IdIndex() {
  JobRecord::Deleter destroy;
  for (auto& [key, page] : pages_) {
    for (int i = 0; i < page.size(); ++i) destroy(page.at(i));
  }
  for (JobRecord* r : others_) destroy(r);
}

JobRecord** IdIndex::Slot(absl::string_view id) const {
  const std::optional<internal::GeneratedIdParts> parts =
      internal::ParseGeneratedId(id);
  if (!parts.has_value()) {
    auto it = others_.find(id);
    return it == others_.end() ? nullptr : const_cast<JobRecord**>(&*it);
  }
  auto it = pages_.find(PageKey{parts->prefix, parts->serial >> kPageBits});
  if (it == pages_.end()) return nullptr;
  return it->second.Find(parts->serial & ((1 << kPageBits) - 1));
}

JobRecord* IdIndex::Find(absl::string_view id) const {
  JobRecord** slot = Slot(id);
  return slot == nullptr ? nullptr : *slot;
}

JobRecord* IdIndex::Emplace(absl::string_view id,
                            absl::FunctionRef<JobRecord::Ptr()> make) {
  const std::optional<internal::GeneratedIdParts> parts =
      internal::ParseGeneratedId(id);
  JobRecord* added = nullptr;
  if (!parts.has_value()) {
    others_.lazy_emplace(id, [&](const auto& construct) {
      added = make().release();
      construct(added);
    });
  } else {
    Page& page = pages_[PageKey{parts->prefix, parts->serial >> kPageBits}];
    const int bit = parts->serial & ((1 << kPageBits) - 1);
    if (page.Find(bit) == nullptr) {
      added = make().release();
      page.Insert(bit, added);
    }
  }
  if (added != nullptr) ++size_;
  return added;
}

void IdIndex::Replace(JobRecord* old, JobRecord::Ptr fresh) {
  if (internal::ParseGeneratedId(old->id()).has_value()) {
    *Slot(old->id()) = fresh.release();
  } else {
    // A set's element is its key: take the old one out, put the new one in.
    others_.erase(others_.find(old->id()));
    others_.insert(fresh.release());
  }
  JobRecord::Deleter()(old);
}

void IdIndex::Erase(JobRecord* r) {
  const std::optional<internal::GeneratedIdParts> parts =
      internal::ParseGeneratedId(r->id());
  if (!parts.has_value()) {
    others_.erase(others_.find(r->id()));
  } else {
    auto it = pages_.find(PageKey{parts->prefix, parts->serial >> kPageBits});
    it->second.Erase(parts->serial & ((1 << kPageBits) - 1));
    if (it->second.empty()) pages_.erase(it);
  }
  JobRecord::Deleter()(r);
  --size_;
  ShrinkIfDrained();
}

void IdIndex::ShrinkIfDrained() {
  if (others_.capacity() > 1024 && others_.size() < others_.capacity() / 16) {
    others_.rehash(0);
  }
  if (pages_.capacity() > 1024 && pages_.size() < pages_.capacity() / 16) {
    pages_.rehash(0);
  }
}

}  // namespace memory_internal
}  // namespace delayq
