// Copyright delayq authors.
//
// Reserving jobs and finishing their leases. The fencing token travels with
// every lease: ack, fail, release and touch name the job and carry the
// token its reserve returned, and the store refuses a token that is no
// longer current (409 FAILED_PRECONDITION), as it refuses a slow worker of
// the library.

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tools/common/values.h"
#include "tools/serve/api/ack_list.h"
#include "tools/serve/api/json_codec.h"
#include "tools/serve/api/routes.h"

namespace delayq {
namespace serve {
namespace {

constexpr char kJob[] = "/v1/jobs/(.+)";
constexpr int kMaxReserve = 1000;
// The longest worker name a reservation may give.
constexpr size_t kMaxWorkerName = 128;

// The "worker" a reservation names (its leases' holder): 1 to
// kMaxWorkerName printable ASCII characters without spaces, so that every
// view can show it as it is; "" when the body names none (the leases are
// then the server's).
absl::StatusOr<std::string> WorkerName(const Json& body) {
  if (!body.contains("worker")) return std::string();
  const Json& worker = body["worker"];
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

absl::StatusOr<Reply> Reserve(const RouteContext& context, const Call& call) {
  if (absl::Status s = OnlyFields(call.body, {"wait_ms", "max", "worker"});
      !s.ok()) {
    return s;
  }
  absl::StatusOr<std::string> worker = WorkerName(call.body);
  if (!worker.ok()) return worker.status();
  absl::StatusOr<int64_t> max = IntField(call.body, "max", 1, 1, kMaxReserve);
  if (!max.ok()) return max.status();
  absl::StatusOr<int64_t> wait_ms =
      IntField(call.body, "wait_ms", 0, 0, INT64_MAX / 1'000'000);
  if (!wait_ms.ok()) return wait_ms.status();
  // Waits are bounded so that a client cannot hold a thread for ever, and
  // a draining server answers at once (one already waiting is woken).
  absl::Duration wait =
      std::min(absl::Milliseconds(*wait_ms), context.max_wait);
  if (context.draining->load()) wait = absl::ZeroDuration();
  ++*context.reserves_waiting;
  absl::StatusOr<std::vector<Lease>> leases =
      context.scheduler->ReserveBatchFor(*worker, call.path[0],
                                         static_cast<int>(*max), wait,
                                         *context.draining);
  --*context.reserves_waiting;
  if (!leases.ok()) return leases.status();
  // A client that gave up waiting would leave the jobs it got leased until
  // their ttr ran out, an attempt spent: they go back at once instead.
  if (wait > absl::ZeroDuration() && !leases->empty() &&
      call.request->client_gone && call.request->client_gone()) {
    for (const Lease& lease : *leases) {
      context.scheduler->Release(lease, absl::ZeroDuration()).IgnoreError();
    }
    return absl::CancelledError("the client went away while it waited");
  }
  std::string text = JsonListText<Lease>("leases", *leases, &AppendLeaseJson);
  context.leases->PutAll(*std::move(leases));
  return Reply::Text(200, std::move(text));
}

// The lease of job `id` under `token` when the lease cache does not have
// it: the job as the store has it now, with the token. A job the store no
// longer has is left to the library to refuse. It does not say when it was
// reserved, so the metrics do not time its handler.
absl::StatusOr<Lease> LeaseFromStore(const RouteContext& context,
                                     const std::string& id, uint64_t token) {
  Lease lease;
  absl::StatusOr<Job> job = context.scheduler->Get(id);
  if (job.ok()) {
    lease.job = *std::move(job);
  } else if (absl::IsNotFound(job.status())) {
    lease.job.id = id;
  } else {
    return job.status();
  }
  lease.token = token;
  lease.deadline = lease.job.deadline;
  return lease;
}

// The lease of job `id` under `token`: as reserve handed it out when this
// server did (Take() forgets it: the request ends it), else from the store.
absl::StatusOr<Lease> FindLease(const RouteContext& context,
                                const std::string& id, uint64_t token,
                                bool take) {
  std::optional<Lease> known =
      take ? context.leases->Take(id, token) : context.leases->Find(id, token);
  if (known.has_value()) return *std::move(known);
  return LeaseFromStore(context, id, token);
}

// A lease route: checks the body's fields, finds the lease, runs `act`.
// `take`: the route ends the lease.
template <typename Act>
Route LeaseRoute(const RouteContext& context,
                 std::initializer_list<absl::string_view> fields, bool take,
                 Act act) {
  std::vector<absl::string_view> allowed(fields);
  allowed.push_back("token");
  return
      [context, allowed, take, act](const Call& call) -> absl::StatusOr<Reply> {
        if (absl::Status s = OnlyFields(call.body, allowed); !s.ok()) return s;
        absl::StatusOr<uint64_t> token = TokenField(call.body);
        if (!token.ok()) return token.status();
        absl::StatusOr<Lease> lease =
            FindLease(context, call.path[0], *token, take);
        if (!lease.ok()) return lease.status();
        return act(*lease, call.body);
      };
}

// Acks every lease of the body's "leases" list ([{"id", "token"}]); replies
// how many were acked and why each other one was not.
absl::StatusOr<Reply> AckMany(const RouteContext& context, const Call& call) {
  // Every item is read before any is acked, so a malformed request acks none.
  absl::StatusOr<std::vector<LeaseName>> items =
      ReadAckList(call.request->body);
  if (!items.ok()) return items.status();
  // The leases found go to the store in one batch; each item's outcome is
  // told in the order of the request.
  std::vector<absl::Status> outcomes(items->size());
  std::vector<Lease> leases;
  leases.reserve(items->size());
  std::vector<size_t> item_of_lease;
  item_of_lease.reserve(items->size());
  std::vector<std::optional<Lease>> known = context.leases->TakeAll(*items);
  for (size_t i = 0; i < items->size(); ++i) {
    if (known[i].has_value()) {
      leases.push_back(*std::move(known[i]));
    } else {
      const LeaseName& item = (*items)[i];
      absl::StatusOr<Lease> lease =
          LeaseFromStore(context, item.id, item.token);
      if (!lease.ok()) {
        outcomes[i] = lease.status();
        continue;
      }
      leases.push_back(*std::move(lease));
    }
    item_of_lease.push_back(i);
  }
  if (!leases.empty()) {
    absl::StatusOr<std::vector<absl::Status>> acked_leases =
        context.scheduler->AckBatch(leases);
    // Which leases were acked is not known: the request failed as a whole.
    if (!acked_leases.ok()) return acked_leases.status();
    for (size_t j = 0; j < leases.size(); ++j) {
      outcomes[item_of_lease[j]] = std::move((*acked_leases)[j]);
    }
  }
  int acked = 0;
  Json errors = Json::array();
  for (size_t i = 0; i < items->size(); ++i) {
    if (outcomes[i].ok()) {
      ++acked;
      continue;
    }
    Json error = StatusToJson(outcomes[i]);
    error["id"] = (*items)[i].id;
    errors.push_back(std::move(error));
  }
  return Reply{200, Json{{"acked", acked}, {"errors", std::move(errors)}}};
}

}  // namespace

void AddLeaseRoutes(Router& router, const RouteContext& context) {
  Scheduler& scheduler = *context.scheduler;
  router.Post("/v1/topics/([^/]+)/reserve",
              [context](const Call& call) { return Reserve(context, call); });
  router.PostBulk("/v1/leases/ack", [context](const Call& call) {
    return AckMany(context, call);
  });
  router.Post(
      absl::StrCat(kJob, "/ack"),
      LeaseRoute(context, {"result", "result_base64"}, /*take=*/true,
                 [&scheduler](const Lease& lease,
                              const Json& body) -> absl::StatusOr<Reply> {
                   absl::StatusOr<std::string> result =
                       BytesFromJson(body, "result", /*optional=*/true);
                   if (!result.ok()) return result.status();
                   if (absl::Status s = scheduler.Ack(lease, *result);
                       !s.ok()) {
                     return s;
                   }
                   return Reply{};
                 }));
  router.Post(
      absl::StrCat(kJob, "/fail"),
      LeaseRoute(
          context, {"error"}, /*take=*/true,
          [&scheduler](const Lease& lease,
                       const Json& body) -> absl::StatusOr<Reply> {
            absl::StatusOr<std::string> error = StringField(body, "error", "");
            if (!error.ok()) return error.status();
            if (absl::Status s = scheduler.Fail(lease, *error); !s.ok()) {
              return s;
            }
            return Reply{};
          }));
  router.Post(
      absl::StrCat(kJob, "/release"),
      LeaseRoute(context, {"delay_ms"}, /*take=*/true,
                 [&scheduler](const Lease& lease,
                              const Json& body) -> absl::StatusOr<Reply> {
                   absl::StatusOr<int64_t> delay_ms =
                       IntField(body, "delay_ms", 0, 0, INT64_MAX / 1'000'000);
                   if (!delay_ms.ok()) return delay_ms.status();
                   if (absl::Status s = scheduler.Release(
                           lease, absl::Milliseconds(*delay_ms));
                       !s.ok()) {
                     return s;
                   }
                   return Reply{};
                 }));
  router.Post(
      absl::StrCat(kJob, "/touch"),
      LeaseRoute(
          context, {}, /*take=*/false,
          [&scheduler, leases = context.leases](
              Lease lease, const Json&) -> absl::StatusOr<Reply> {
            if (absl::Status s = scheduler.Touch(lease); !s.ok()) {
              return s;
            }
            leases->Put(lease);  // the later deadline
            return Reply{200, Json{{"deadline", cli::UtcText(lease.deadline)}}};
          }));
}

}  // namespace serve
}  // namespace delayq
