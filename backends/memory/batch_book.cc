// Copyright delayq authors.

#include "backends/memory/batch_book.h"

#include <utility>

#include "absl/status/statusor.h"
#include "src/common/contract_errors.h"

namespace delayq {
namespace memory_internal {
namespace {

void Count(Batch& batch, BatchBook::Finish how) {
  switch (how) {
    case BatchBook::Finish::kDone:
      ++batch.done;
      return;
    case BatchBook::Finish::kDead:
      ++batch.dead;
      return;
    case BatchBook::Finish::kCancelled:
      ++batch.cancelled;
      return;
  }
}

}  // namespace

void BatchBook::Open(absl::string_view id) {
  Opened opened;
  opened.batch.id = std::string(id);
  opened.batch.completion_id = opened.batch.id;
  opened.serial = ++next_serial_;
  batches_.insert_or_assign(opened.batch.id, std::move(opened));
}

absl::Status BatchBook::CheckOpen(absl::string_view id) const {
  auto it = batches_.find(id);
  if (it == batches_.end()) return internal::NoSuchBatch(id);
  if (it->second.batch.closed) return internal::BatchClosed(id);
  return absl::OkStatus();
}

void BatchBook::Join(absl::string_view id, absl::string_view job,
                     std::optional<Finish> finished) {
  Opened& opened = batches_.find(id)->second;
  ++opened.batch.total;
  if (finished.has_value()) {
    Count(opened.batch, *finished);
  } else {
    members_.insert_or_assign(std::string(job),
                              Membership{std::string(id), opened.serial});
  }
}

std::optional<std::string> BatchBook::Settle(absl::string_view job,
                                             Finish how) {
  if (members_.empty()) return std::nullopt;
  auto member = members_.find(job);
  if (member == members_.end()) return std::nullopt;
  Membership joined = std::move(member->second);
  members_.erase(member);
  auto it = batches_.find(joined.batch);
  // Dropped meanwhile, and perhaps opened again since: not its batch.
  if (it == batches_.end() || it->second.serial != joined.serial) {
    return std::nullopt;
  }
  Batch& batch = it->second.batch;
  Count(batch, how);
  if (!batch.complete()) return std::nullopt;
  return std::move(joined.batch);
}

absl::Status BatchBook::Close(absl::string_view id, bool* completed) {
  *completed = false;
  auto it = batches_.find(id);
  if (it == batches_.end()) return internal::NoSuchBatch(id);
  Batch& batch = it->second.batch;
  if (batch.closed) return absl::OkStatus();
  batch.closed = true;
  *completed = batch.complete();
  return absl::OkStatus();
}

absl::StatusOr<Batch> BatchBook::Get(absl::string_view id) const {
  auto it = batches_.find(id);
  if (it == batches_.end()) return internal::NoSuchBatch(id);
  return it->second.batch;
}

void BatchBook::Drop(absl::string_view id) {
  if (!batches_.empty()) batches_.erase(id);
}

}  // namespace memory_internal
}  // namespace delayq
