// Copyright delayq authors.
//
// BatchBook — the memory store's batches (delayq/batch.h): each batch's
// counts, and the batch each unfinished job of one belongs to, by id.
//
// Each batch opened gets a serial never given before, and a job's
// membership names it: a job of a dropped batch counts in no later batch
// of the same id, and Drop() stays O(1) however many jobs the batch had
// (their entries go as they finish).
//
// Kept by id, as the DependencyBook is, so that the records stay the size
// they were: only jobs of a batch pay for it.
//
// Not thread-safe: the store's mutex guards it.

#ifndef DELAYQ_BACKENDS_MEMORY_BATCH_BOOK_H_
#define DELAYQ_BACKENDS_MEMORY_BATCH_BOOK_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "delayq/batch.h"

namespace delayq {
namespace memory_internal {

class BatchBook {
 public:
  // How a job of a batch finished.
  enum class Finish { kDone, kDead, kCancelled };

  // Opens batch `id` (its completion job's id, which the caller found free).
  void Open(absl::string_view id);

  // NotFound or FailedPrecondition (closed) unless `id` takes jobs.
  absl::Status CheckOpen(absl::string_view id) const;

  // Counts `job` into the open batch `id`: pending, or already finished
  // (`finished`) when it finished as it was added.
  void Join(absl::string_view id, absl::string_view job,
            std::optional<Finish> finished);

  // Counts `job` finished, once: a job of no batch, or one counted before,
  // changes nothing. Returns the batch's id when this completed it (closed,
  // nothing pending): its completion job is due for release.
  std::optional<std::string> Settle(absl::string_view job, Finish how);

  // Closes batch `id`. NotFound when there is none. Sets *completed when
  // this call completed it (it was open and nothing is pending).
  absl::Status Close(absl::string_view id, bool* completed);

  // Batch `id`, or NotFound.
  absl::StatusOr<Batch> Get(absl::string_view id) const;

  // Drops batch `id` (its completion job left the store), if there is one.
  // Its unfinished jobs are counted by no one, in no later batch of `id`
  // either.
  void Drop(absl::string_view id);

 private:
  // A batch as opened once: a batch of the same id opened later is another.
  struct Opened {
    Batch batch;
    uint64_t serial = 0;
  };
  // The batch an unfinished job joined.
  struct Membership {
    std::string batch;
    uint64_t serial = 0;
  };

  absl::flat_hash_map<std::string, Opened> batches_;
  // Unfinished job -> its batch.
  absl::flat_hash_map<std::string, Membership> members_;
  uint64_t next_serial_ = 0;
};

}  // namespace memory_internal
}  // namespace delayq

#endif  // DELAYQ_BACKENDS_MEMORY_BATCH_BOOK_H_
