// Copyright delayq authors.

#include "delayq/open.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "delayq/memory_backend.h"

namespace delayq {

absl::StatusOr<std::unique_ptr<Backend>> OpenBackend(absl::string_view url) {
  if (url == "memory:" || url == "memory") return NewMemoryBackend();
  return absl::InvalidArgumentError(
      absl::StrCat("unknown store URL \"", url,
                   "\"; expected memory:, sqlite:PATH or redis://HOST:PORT"));
}

}  // namespace delayq
