// Copyright delayq authors.

#include "backends/redis/internal/script_args.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace delayq {
namespace redis_internal {

CallBuilder::CallBuilder(absl::string_view script, size_t keys, size_t args) {
  call_.script = script;
  call_.keys.reserve(keys);
  call_.args.reserve(args);
}

void CallBuilder::Take(const char* where, const char* name,
                       std::optional<std::string>* value,
                       std::vector<std::string>* out) {
  if (!value->has_value()) {
    if (unset_.empty()) {
      unset_ = absl::StrCat(where, "[", out->size() + 1, "] ", name);
    }
    out->emplace_back();
    return;
  }
  out->push_back(std::move(**value));
}

void CallBuilder::Key(const char* name, std::optional<std::string>* value) {
  Take("KEYS", name, value, &call_.keys);
}

void CallBuilder::Arg(const char* name, std::optional<std::string>* value) {
  Take("ARGV", name, value, &call_.args);
}

void CallBuilder::List(ArgList* list) {
  call_.args.reserve(call_.args.size() + list->values.size());
  for (std::string& v : list->values) call_.args.push_back(std::move(v));
  call_.encoded_args = std::move(list->encoded);
  call_.encoded_count = list->encoded_count;
}

absl::StatusOr<Scripts::Call> CallBuilder::Done() && {
  if (!unset_.empty()) {
    return absl::InternalError(absl::StrCat("redis: a call of script '",
                                            call_.script, "' leaves ", unset_,
                                            " unset"));
  }
  return std::move(call_);
}

}  // namespace redis_internal
}  // namespace delayq
