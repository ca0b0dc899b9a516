// Copyright delayq authors.

#include "src/scheduler/flow_ids.h"

#include "absl/strings/str_cat.h"
#include "src/common/hash_tag.h"
#include "src/common/validation.h"

namespace delayq {
namespace internal {
namespace {

// The first hash tag of an id `jobs` names, as NameFlowJobs() says; "" for
// none.
std::string FlowTag(absl::Span<const NewJob> jobs) {
  for (const NewJob& job : jobs) {
    const absl::string_view tag = HashTagOf(job.id);
    if (!tag.empty()) return std::string(tag);
  }
  for (const NewJob& job : jobs) {
    for (const std::string& id : job.after) {
      const absl::string_view tag = HashTagOf(id);
      if (!tag.empty()) return std::string(tag);
    }
    const absl::string_view tag = HashTagOf(job.batch);
    if (!tag.empty()) return std::string(tag);
  }
  return "";
}

}  // namespace

absl::Status NameFlowJobs(absl::Span<NewJob> jobs, bool by_hash_tag,
                          absl::FunctionRef<std::string()> next_id) {
  std::string prefix;  // "{tag}:", once a job needs it
  for (size_t i = 0; i < jobs.size(); ++i) {
    NewJob& job = jobs[i];
    if (!job.id.empty()) continue;
    if (!by_hash_tag) {
      job.id = next_id();
      continue;
    }
    if (prefix.empty()) {
      std::string tag = FlowTag(jobs);
      if (tag.empty()) tag = next_id();
      prefix = absl::StrCat("{", tag, "}:");
    }
    job.id = absl::StrCat(prefix, next_id());
    if (absl::Status s = ValidateId(job.id); !s.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("flow job ", i, ": the id made for it with the flow's ",
                       "hash tag is too long (", s.message(), ")"));
    }
  }
  return absl::OkStatus();
}

}  // namespace internal
}  // namespace delayq
