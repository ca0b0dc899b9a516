// Copyright delayq authors.

#include "delayq/batch.h"

#include "absl/strings/str_cat.h"

namespace delayq {
namespace internal {

absl::Status NoBatches(absl::string_view store) {
  return absl::UnimplementedError(absl::StrCat(
      store, ": this store cannot keep batches (JobOptions::batch)"));
}

}  // namespace internal
}  // namespace delayq
