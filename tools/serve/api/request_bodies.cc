// Copyright delayq authors.

#include "tools/serve/api/request_bodies.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace delayq {
namespace serve {
namespace {

// The list `name` of `body`: 1 to kMaxBatch items, or nullptr.
const Json* ListField(const Json& body, const char* name) {
  const Json* list = body.contains(name) ? &body[name] : nullptr;
  if (list == nullptr || !list->is_array() || list->empty() ||
      list->size() > kMaxBatch) {
    return nullptr;
  }
  return list;
}

// Job `item` of a flow; errors without the job's place.
absl::StatusOr<Scheduler::FlowJob> FlowJobFromJson(const Json& item) {
  if (!item.is_object()) return absl::InvalidArgumentError("not an object");
  absl::StatusOr<std::string> topic = StringField(item, "topic", "");
  if (!topic.ok()) return topic.status();
  if (topic->empty()) return absl::InvalidArgumentError("no 'topic'");
  absl::StatusOr<JobOptions> options =
      JobOptionsFromJson(item, {"topic", "payload", "payload_base64"});
  if (!options.ok()) return options.status();
  absl::StatusOr<std::string> payload = PayloadFromJson(item);
  if (!payload.ok()) return payload.status();
  return Scheduler::FlowJob{*std::move(topic), *std::move(payload),
                            *std::move(options)};
}

}  // namespace

absl::StatusOr<std::vector<std::string>> BulkIdsFromJson(const Json& body) {
  if (absl::Status s = OnlyFields(body, {"ids"}); !s.ok()) return s;
  const Json* ids = ListField(body, "ids");
  if (ids == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "field 'ids' must be a list of 1 to ", kMaxBatch, " job ids"));
  }
  std::vector<std::string> out;
  out.reserve(ids->size());
  for (const Json& id : *ids) {
    if (!id.is_string() || id.get_ref<const std::string&>().empty()) {
      return absl::InvalidArgumentError(
          "field 'ids' must hold job ids (strings that are not empty)");
    }
    // A malformed id refuses the request, which then changes nothing.
    if (absl::Status s =
            Scheduler::CheckJobId(id.get_ref<const std::string&>());
        !s.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("field 'ids', item ", out.size(), ": ", s.message()));
    }
    out.push_back(id.get<std::string>());
  }
  return out;
}

absl::StatusOr<std::vector<Scheduler::FlowJob>> FlowFromJson(const Json& body) {
  if (absl::Status s = OnlyFields(body, {"jobs"}); !s.ok()) return s;
  const Json* list = ListField(body, "jobs");
  if (list == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "field 'jobs' must be a list of 1 to ", kMaxBatch, " jobs"));
  }
  std::vector<Scheduler::FlowJob> flow;
  flow.reserve(list->size());
  for (size_t i = 0; i < list->size(); ++i) {
    absl::StatusOr<Scheduler::FlowJob> job = FlowJobFromJson((*list)[i]);
    if (!job.ok()) {
      return absl::Status(
          job.status().code(),
          absl::StrCat("jobs[", i, "]: ", job.status().message()));
    }
    flow.push_back(*std::move(job));
  }
  return flow;
}

absl::StatusOr<std::string> WorkerFromJson(const Json& object) {
  const Json* field = Field(object, "worker");
  if (field == nullptr) return std::string();
  const Json& worker = *field;
  bool ok = worker.is_string();
  if (ok) {
    const std::string& name = worker.get_ref<const std::string&>();
    ok = !name.empty() && name.size() <= kMaxWorkerName;
    for (char c : name) ok = ok && c > ' ' && c < 0x7f;
  }
  if (!ok) {
    return absl::InvalidArgumentError(
        absl::StrCat("field 'worker' must be 1 to ", kMaxWorkerName,
                     " printable ASCII characters without spaces"));
  }
  return worker.get<std::string>();
}

}  // namespace serve
}  // namespace delayq
