// Copyright delayq authors.
//
// The JSON of `delayq serve`: request bodies (tools/serve/api/json_codec.h),
// the ack list's quick scanner (tools/serve/api/ack_list.h), and the jobs and
// leases the server writes.
//
// Properties:
//   - the scanner and the parser agree: when AckListFromText() reads a
//     list, ParseBody() then AckListFromJson() reads the same list;
//   - ReadAckList(), ParseBody() and the readers of a body
//     (JobOptionsFromJson, LimitFromJson, PayloadFromJson, TokenField)
//     return a value or a status for any body; ReadAckList()'s list has 1
//     to kMaxAcks leases, each with an id;
//   - the readers of the bodies that act on many jobs
//     (tools/serve/api/request_bodies.h) keep to their limits: a bulk
//     action's 1 to kMaxBatch ids, none empty; a flow's 1 to kMaxBatch jobs,
//     each with a topic; a worker's name of printable ASCII, "" only when
//     the body names none;
//   - a flow read so is enqueued all or nothing (Scheduler::EnqueueFlow()
//     on a memory store): every job of it is stored, or none is;
//   - AppendJobJson() and AppendLeaseJson() of a job built from the input
//     are JSON, and their fields read back as the job's.
// Bodies are read on a thread with the stack of a server's connection
// thread (HttpServer::Options::thread_stack_bytes), where the server reads
// them.

#include <pthread.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "delayq/clock.h"
#include "delayq/job.h"
#include "delayq/open.h"
#include "delayq/scheduler.h"
#include "fuzzer/FuzzedDataProvider.h"
#include "tests/fuzz/fuzz_check.h"
#include "tools/common/values.h"
#include "tools/serve/api/ack_list.h"
#include "tools/serve/api/json_codec.h"
#include "tools/serve/api/request_bodies.h"
#include "tools/serve/http/http_server.h"

namespace delayq {
namespace {

using fuzz::Escaped;
using serve::Json;

std::string ListText(const std::vector<serve::LeaseName>& list) {
  std::string out;
  for (const serve::LeaseName& l : list) {
    absl::StrAppend(&out, "(", Escaped(l.id), ", ", l.token, ")");
  }
  return out;
}

// Enqueues `flow` on a fresh memory store: all of it is stored, or none.
void CheckFlowEnqueued(const std::vector<Scheduler::FlowJob>& flow,
                       const std::string& where) {
  SimulatedClock clock(absl::FromUnixSeconds(1'800'000'000));
  absl::StatusOr<std::unique_ptr<Backend>> backend = OpenBackend("memory:");
  FUZZ_CHECK(backend.ok(), "memory store: ", backend.status().ToString());
  SchedulerOptions options;
  options.clock = &clock;
  absl::StatusOr<std::unique_ptr<Scheduler>> scheduler =
      Scheduler::Create(*std::move(backend), options);
  FUZZ_CHECK(scheduler.ok(), "scheduler: ", scheduler.status().ToString());
  absl::StatusOr<std::vector<std::string>> ids =
      (*scheduler)->EnqueueFlow(flow);
  if (ids.ok()) {
    FUZZ_CHECK(ids->size() == flow.size(), where, ": ", ids->size(),
               " ids for a flow of ", flow.size());
    for (const std::string& id : *ids) {
      absl::StatusOr<Job> job = (*scheduler)->Get(id);
      FUZZ_CHECK(job.ok(), where, ": job '", Escaped(id),
                 "' of the flow is not stored: ", job.status().ToString());
    }
    return;
  }
  absl::StatusOr<std::vector<std::string>> topics = (*scheduler)->Topics();
  FUZZ_CHECK(topics.ok() && topics->empty(), where, ": the flow was refused (",
             ids.status().ToString(), ") but the store has topics");
  for (const Scheduler::FlowJob& job : flow) {
    if (job.options.id.empty()) continue;
    FUZZ_CHECK(absl::IsNotFound((*scheduler)->Get(job.options.id).status()),
               where, ": the flow was refused (", ids.status().ToString(),
               ") but its job '", Escaped(job.options.id), "' is stored");
  }
}

void CheckManyJobBodies(const Json& json, const std::string& where) {
  absl::StatusOr<std::vector<std::string>> ids = serve::BulkIdsFromJson(json);
  if (ids.ok()) {
    FUZZ_CHECK(!ids->empty() && ids->size() <= serve::kMaxBatch, where,
               ": BulkIdsFromJson() read ", ids->size(), " ids");
    for (const std::string& id : *ids) {
      FUZZ_CHECK(!id.empty(), where, ": BulkIdsFromJson() read an empty id");
    }
  }
  absl::StatusOr<std::string> worker = serve::WorkerFromJson(json);
  if (worker.ok()) {
    FUZZ_CHECK(worker->empty() != json.contains("worker"), where,
               ": WorkerFromJson() read '", Escaped(*worker), "'");
    FUZZ_CHECK(worker->size() <= serve::kMaxWorkerName, where,
               ": a worker name of ", worker->size(), " bytes");
    for (char c : *worker) {
      FUZZ_CHECK(c > ' ' && c < 0x7f, where, ": worker name '",
                 Escaped(*worker), "'");
    }
  }
  absl::StatusOr<std::vector<Scheduler::FlowJob>> flow =
      serve::FlowFromJson(json);
  if (!flow.ok()) return;
  FUZZ_CHECK(!flow->empty() && flow->size() <= serve::kMaxBatch, where,
             ": FlowFromJson() read ", flow->size(), " jobs");
  for (const Scheduler::FlowJob& job : *flow) {
    FUZZ_CHECK(!job.topic.empty(), where, ": a flow job without a topic");
  }
  CheckFlowEnqueued(*flow, where);
}

void CheckBody(const std::string& body) {
  const std::string where = absl::StrCat("body \"", Escaped(body), "\"");
  const std::optional<std::vector<serve::LeaseName>> quick =
      serve::AckListFromText(body);
  absl::StatusOr<Json> json = serve::ParseBody(body);
  if (quick.has_value()) {
    FUZZ_CHECK(json.ok(), where, ": the scanner read ", ListText(*quick),
               ", ParseBody() says ", json.status().ToString());
    absl::StatusOr<std::vector<serve::LeaseName>> slow =
        serve::AckListFromJson(*json);
    FUZZ_CHECK(slow.ok(), where, ": the scanner read ", ListText(*quick),
               ", AckListFromJson() says ", slow.status().ToString());
    FUZZ_CHECK(ListText(*slow) == ListText(*quick), where,
               ": the scanner read ", ListText(*quick),
               ", AckListFromJson() read ", ListText(*slow));
  }
  absl::StatusOr<std::vector<serve::LeaseName>> list = serve::ReadAckList(body);
  if (list.ok()) {
    FUZZ_CHECK(!list->empty() && list->size() <= serve::kMaxAcks, where,
               ": ReadAckList() read ", list->size(), " leases");
    for (const serve::LeaseName& l : *list) {
      FUZZ_CHECK(!l.id.empty(), where, ": a lease without an id");
    }
  }
  if (!json.ok()) return;
  FUZZ_CHECK(json->is_object(), where, ": ParseBody() gave a non-object");
  // Each reader returns a value or a status; the values are not checked.
  (void)serve::JobOptionsFromJson(*json,
                                  {"topic", "payload", "payload_base64"});
  (void)serve::LimitFromJson(*json);
  (void)serve::PayloadFromJson(*json, /*optional=*/true);
  (void)serve::TokenField(*json);
  (void)serve::StringField(*json, "topic", "");
  (void)serve::IntField(*json, "max", 1, 1, 1000);
  CheckManyJobBodies(*json, where);
}

// The parser's recursion is bounded by the stack of the thread it runs on:
// read bodies where the server does.
void CheckBodyOnServerStack(const std::string& body) {
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr,
                            serve::HttpServer::Options().thread_stack_bytes);
  pthread_t thread;
  auto run = [](void* arg) -> void* {
    CheckBody(*static_cast<const std::string*>(arg));
    return nullptr;
  };
  FUZZ_CHECK(
      pthread_create(&thread, &attr, run, const_cast<std::string*>(&body)) == 0,
      "pthread_create");
  pthread_attr_destroy(&attr);
  pthread_join(thread, nullptr);
}

std::string TextField(const Json& doc, const std::string& name) {
  if (doc.contains(name) && doc[name].is_string()) {
    return doc[name].get<std::string>();
  }
  std::string bytes;
  if (doc.contains(name + "_base64") && doc[name + "_base64"].is_string() &&
      absl::Base64Unescape(doc[name + "_base64"].get<std::string>(), &bytes)) {
    return bytes;
  }
  return "<missing " + name + ">";
}

Job JobFrom(FuzzedDataProvider& in) {
  Job job;
  job.id = in.ConsumeRandomLengthString(24);
  job.topic = in.ConsumeRandomLengthString(24);
  job.last_error = in.ConsumeRandomLengthString(24);
  job.state = static_cast<JobState>(in.ConsumeIntegralInRange(0, 3));
  job.priority = in.ConsumeIntegral<int>();
  job.attempts = in.ConsumeIntegral<int>();
  job.max_attempts = in.ConsumeIntegral<int>();
  job.ttr = absl::Milliseconds(in.ConsumeIntegral<int32_t>());
  if (in.ConsumeBool()) {
    job.backoff =
        Backoff::Fixed(absl::Milliseconds(in.ConsumeIntegral<uint32_t>()));
  } else {
    const uint16_t base_ms = in.ConsumeIntegral<uint16_t>();
    const uint16_t max_s = in.ConsumeIntegral<uint16_t>();
    job.backoff =
        Backoff::Exponential(absl::Milliseconds(base_ms), absl::Seconds(max_s));
  }
  // Times in years 0000..9999, to the millisecond (what the text carries).
  auto time = [&in]() {
    return absl::FromUnixMillis(in.ConsumeIntegralInRange<int64_t>(
        int64_t{-62'167'219'200'000}, int64_t{253'402'300'799'999}));
  };
  job.enqueued_at = time();
  job.run_at = time();
  job.deadline = time();
  job.payload = in.ConsumeRemainingBytesAsString();
  return job;
}

void CheckJobJson(const Job& job, uint64_t token) {
  std::string text;
  serve::AppendLeaseJson(Lease{job, token, job.deadline}, &text);
  const Json doc = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  const std::string where = absl::StrCat("lease JSON ", Escaped(text));
  FUZZ_CHECK(doc.is_object() && doc.contains("job") && doc["job"].is_object(),
             where, " does not parse");
  const Json& j = doc["job"];
  auto field_is = [&](const char* name, const Json& want) {
    FUZZ_CHECK(j.contains(name) && j[name] == want, where, ": field ", name,
               " is not ", want.dump());
  };
  field_is("state", std::string(JobStateName(job.state)));
  field_is("priority", job.priority);
  field_is("attempts", job.attempts);
  field_is("max_attempts", job.max_attempts);
  field_is("ttr_ms", absl::ToInt64Milliseconds(job.ttr));
  field_is("backoff", cli::BackoffText(job.backoff));
  field_is("enqueued_at", cli::UtcText(job.enqueued_at));
  field_is("run_at", cli::UtcText(job.run_at));
  field_is("deadline", job.state == JobState::kReserved
                           ? Json(cli::UtcText(job.deadline))
                           : Json(nullptr));
  for (const auto& [name, value] :
       {std::pair<const char*, const std::string*>{"id", &job.id},
        {"topic", &job.topic},
        {"last_error", &job.last_error},
        {"payload", &job.payload}}) {
    FUZZ_CHECK(TextField(j, name) == *value, where, ": field ", name,
               " reads back as ", Escaped(TextField(j, name)));
  }
  FUZZ_CHECK(doc.contains("token") && doc["token"] == absl::StrCat(token),
             where, ": token");
  FUZZ_CHECK(
      doc.contains("deadline") && doc["deadline"] == cli::UtcText(job.deadline),
      where, ": the lease's deadline");
  // The token reads back as a client sends it.
  absl::StatusOr<uint64_t> back = serve::TokenField(doc);
  FUZZ_CHECK(back.ok() && *back == token, where, ": TokenField()");
}

}  // namespace
}  // namespace delayq

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace delayq;  // NOLINT: the entry point is outside the namespace
  // The whole input is a request body; then, read again as values, a job.
  CheckBodyOnServerStack(
      std::string(reinterpret_cast<const char*>(data), size));
  FuzzedDataProvider in(data, size);
  const uint64_t token = in.ConsumeIntegral<uint64_t>();
  CheckJobJson(JobFrom(in), token);
  return 0;
}
