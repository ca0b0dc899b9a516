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
  Batch batch;
  batch.id = std::string(id);
  batch.completion_id = batch.id;
  batches_.insert_or_assign(batch.id, std::move(batch));
}

absl::Status BatchBook::CheckOpen(absl::string_view id) const {
  auto it = batches_.find(id);
  if (it == batches_.end()) return internal::NoSuchBatch(id);
  if (it->second.closed) return internal::BatchClosed(id);
  return absl::OkStatus();
}

void BatchBook::Join(absl::string_view id, absl::string_view job,
                     std::optional<Finish> finished) {
  Batch& batch = batches_.find(id)->second;
  ++batch.total;
  if (finished.has_value()) {
    Count(batch, *finished);
  } else {
    members_.insert_or_assign(std::string(job), std::string(id));
  }
}

std::optional<std::string> BatchBook::Settle(absl::string_view job,
                                             Finish how) {
  if (members_.empty()) return std::nullopt;
  auto member = members_.find(job);
  if (member == members_.end()) return std::nullopt;
  std::string id = std::move(member->second);
  members_.erase(member);
  auto it = batches_.find(id);
  if (it == batches_.end()) return std::nullopt;  // dropped meanwhile
  Count(it->second, how);
  if (!it->second.complete()) return std::nullopt;
  return id;
}

absl::Status BatchBook::Close(absl::string_view id, bool* completed) {
  *completed = false;
  auto it = batches_.find(id);
  if (it == batches_.end()) return internal::NoSuchBatch(id);
  if (it->second.closed) return absl::OkStatus();
  it->second.closed = true;
  *completed = it->second.complete();
  return absl::OkStatus();
}

absl::StatusOr<Batch> BatchBook::Get(absl::string_view id) const {
  auto it = batches_.find(id);
  if (it == batches_.end()) return internal::NoSuchBatch(id);
  return it->second;
}

void BatchBook::Drop(absl::string_view id) {
  if (!batches_.empty()) batches_.erase(id);
}

}  // namespace memory_internal
}  // namespace delayq
