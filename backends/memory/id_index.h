// Copyright delayq authors.
//
// IdIndex — the memory store's jobs by id; it owns their records.
//
// Hashing an id sends each new job to a random place in a table of millions:
// a cache miss per enqueue, and another per job whenever the table grows.
// Most jobs, though, have generated ids (generated_id.h), a prefix and a
// serial that counts up, and those are best kept side by side. So a
// generated id is kept in a page of 64 consecutive serials of its prefix,
// found through a small hash map by (prefix, serial / 64); a page stores
// only the jobs it has, packed in serial order, and goes when its last job
// does. Enqueueing in order fills one page at a time in the cache. Every
// other id goes in a hash set keyed by the record's own copy of the id.
//
// Not thread-safe: the store's mutex guards it.

#ifndef DELAYQ_BACKENDS_MEMORY_ID_INDEX_H_
#define DELAYQ_BACKENDS_MEMORY_ID_INDEX_H_

#include <cstddef>
#include <cstdint>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/functional/function_ref.h"
#include "absl/strings/string_view.h"
#include "backends/memory/job_record.h"

namespace delayq {
namespace memory_internal {

class IdIndex {
 public:
  IdIndex() = default;
  ~IdIndex();
  IdIndex(const IdIndex&) = delete;
  IdIndex& operator=(const IdIndex&) = delete;

  // The record with `id`, or null.
  JobRecord* Find(absl::string_view id) const;

  // Adds the record that `make` returns, whose id is `id`, unless a record
  // has that id already. Returns the new record, or null when the id is
  // taken (then `make` is not called).
  JobRecord* Emplace(absl::string_view id,
                     absl::FunctionRef<JobRecord::Ptr()> make);

  // Puts `fresh` in the place of `old`, which has the same id, and destroys
  // `old`. REQUIRES: `old` is in the index.
  void Replace(JobRecord* old, JobRecord::Ptr fresh);

  // Removes and destroys `r`. REQUIRES: `r` is in the index.
  void Erase(JobRecord* r);

  size_t size() const { return size_; }

 private:
  // Serials per page: one bit each in the page's occupancy word.
  static constexpr int kPageBits = 6;

  struct PageKey {
    uint64_t prefix;
    uint64_t page;
    template <typename H>
    friend H AbslHashValue(H h, const PageKey& k) {
      return H::combine(std::move(h), k.prefix, k.page);
    }
    friend bool operator==(const PageKey& a, const PageKey& b) {
      return a.prefix == b.prefix && a.page == b.page;
    }
  };
  // The records of one page's serials, packed in serial order: a page of a
  // few jobs is a few words.
  class Page {
   public:
    Page() = default;
    ~Page() { delete[] slots_; }
    Page(Page&& other) noexcept
        : occupied_(std::exchange(other.occupied_, 0)),
          slots_(std::exchange(other.slots_, nullptr)),
          capacity_(std::exchange(other.capacity_, 0)) {}
    Page& operator=(Page&& other) noexcept {
      std::swap(occupied_, other.occupied_);
      std::swap(slots_, other.slots_);
      std::swap(capacity_, other.capacity_);
      return *this;
    }

    // The slot of serial `bit` of the page, or null.
    JobRecord** Find(int bit) const;
    // REQUIRES: serial `bit` has no record.
    void Insert(int bit, JobRecord* r);
    // REQUIRES: serial `bit` has a record.
    void Erase(int bit);
    bool empty() const { return occupied_ == 0; }
    int size() const;
    JobRecord* at(int i) const { return slots_[i]; }

   private:
    int Rank(int bit) const;
    void Resize(int capacity);

    uint64_t occupied_ = 0;  // bit i: serial i of the page has a record
    JobRecord** slots_ = nullptr;
    int capacity_ = 0;
  };

  // Records by their own id.
  struct IdHash {
    using is_transparent = void;
    size_t operator()(absl::string_view id) const;
    size_t operator()(const JobRecord* r) const { return (*this)(r->id()); }
  };
  struct IdEq {
    using is_transparent = void;
    static absl::string_view IdOf(absl::string_view id) { return id; }
    static absl::string_view IdOf(const JobRecord* r) { return r->id(); }
    template <typename A, typename B>
    bool operator()(const A& a, const B& b) const {
      return IdOf(a) == IdOf(b);
    }
  };

  // The slot that holds the record with `id`, or null.
  JobRecord** Slot(absl::string_view id) const;
  // A drained store gives its tables back instead of keeping the peak.
  void ShrinkIfDrained();

  absl::flat_hash_map<PageKey, Page> pages_;
  absl::flat_hash_set<JobRecord*, IdHash, IdEq> others_;
  size_t size_ = 0;
};

}  // namespace memory_internal
}  // namespace delayq

#endif  // DELAYQ_BACKENDS_MEMORY_ID_INDEX_H_
