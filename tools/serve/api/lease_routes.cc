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
#include "tools/serve/api/request_bodies.h"
#include "tools/serve/api/routes.h"
#include "tools/serve/http/error_reply.h"

namespace delayq {
namespace serve {
namespace {

constexpr char kJob[] = "/v1/jobs/([^/]+)";
constexpr int kMaxReserve = 1000;
// How long a reservation may wait for a job: the body's "wait_ms", bounded
// so that a client cannot hold a thread for ever; none while the server
// drains (a reservation already waiting is woken).
absl::StatusOr<absl::Duration> ReserveWait(const RouteContext& context,
                                           const Json& body) {
  absl::StatusOr<int64_t> wait_ms =
      IntField(body, "wait_ms", 0, 0, INT64_MAX / 1'000'000);
  if (!wait_ms.ok()) return wait_ms.status();
  if (context.draining->load()) return absl::ZeroDuration();
  return std::min(absl::Milliseconds(*wait_ms), context.max_wait);
}

// A client that gave up waiting would leave the jobs it got leased until
// their ttr ran out, an attempt spent: they go back at once instead, and
// the request ends Cancelled.
absl::Status ReleaseIfClientWentAway(const RouteContext& context,
                                     const Call& call, absl::Duration wait,
                                     absl::Span<const Lease> leases) {
  if (wait == absl::ZeroDuration() || leases.empty() ||
      !call.request->client_gone || !call.request->client_gone()) {
    return absl::OkStatus();
  }
  for (const Lease& lease : leases) {
    context.scheduler->Release(lease, absl::ZeroDuration()).IgnoreError();
  }
  return absl::CancelledError("the client went away while it waited");
}

absl::StatusOr<Reply> Reserve(const RouteContext& context, const Call& call) {
  if (absl::Status s = OnlyFields(call.body, {"wait_ms", "max", "worker"});
      !s.ok()) {
    return s;
  }
  absl::StatusOr<std::string> worker = WorkerFromJson(call.body);
  if (!worker.ok()) return worker.status();
  absl::StatusOr<int64_t> max = IntField(call.body, "max", 1, 1, kMaxReserve);
  if (!max.ok()) return max.status();
  absl::StatusOr<absl::Duration> wait = ReserveWait(context, call.body);
  if (!wait.ok()) return wait.status();
  ++*context.reserves_waiting;
  absl::StatusOr<std::vector<Lease>> leases =
      context.scheduler->ReserveBatchFor(*worker, call.path[0],
                                         static_cast<int>(*max), *wait,
                                         *context.draining);
  --*context.reserves_waiting;
  if (!leases.ok()) return leases.status();
  if (absl::Status s = ReleaseIfClientWentAway(context, call, *wait, *leases);
      !s.ok()) {
    return s;
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

// What an ack's "next" asks for: the topic to reserve the next job from,
// how long to wait for one, and the worker who holds it ("" for the
// server), as a reservation's body says them.
struct NextReservation {
  std::string topic;
  absl::Duration wait;
  std::string worker;
};

// The body's "next", read before anything happens, so that a malformed one
// changes nothing.
absl::StatusOr<std::optional<NextReservation>> ReadNext(
    const RouteContext& context, const Json& body) {
  if (!body.contains("next")) return std::nullopt;
  const Json& next = body["next"];
  if (!next.is_object()) {
    return absl::InvalidArgumentError(
        "field 'next' must be an object: {\"topic\": ..., \"wait_ms\": ...}");
  }
  if (absl::Status s = OnlyFields(next, {"topic", "wait_ms", "worker"});
      !s.ok()) {
    return s;
  }
  absl::StatusOr<std::string> topic = StringField(next, "topic", "");
  if (!topic.ok()) return topic.status();
  if (topic->empty()) {
    return absl::InvalidArgumentError("field 'next' needs a 'topic'");
  }
  if (absl::Status s = Scheduler::CheckTopic(*topic); !s.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("field 'next': ", s.message()));
  }
  absl::StatusOr<absl::Duration> wait = ReserveWait(context, next);
  if (!wait.ok()) return wait.status();
  absl::StatusOr<std::string> worker = WorkerFromJson(next);
  if (!worker.ok()) return worker.status();
  return NextReservation{*std::move(topic), *wait, *std::move(worker)};
}

// The ack of `lease` and, in the same store call where the store can, the
// reservation of the next job of `next.topic` (waiting up to `next.wait`):
// a one-job-at-a-time consumer's loop in one request per job. 200 with
// "acked", the ack's refusal ("ack_error") if any, and "leases" (none or
// one) or why the reservation failed ("reserve_error"); when the store
// could not be asked at all, its error.
absl::StatusOr<Reply> AckAndReserveNext(const RouteContext& context,
                                        const Call& call, const Lease& lease,
                                        absl::string_view result,
                                        const NextReservation& next) {
  ++*context.reserves_waiting;
  Scheduler::AckedAndNext step = context.scheduler->AckAndReserveFor(
      next.worker, lease, next.topic, next.wait, result);
  --*context.reserves_waiting;
  if (!step.acked.ok() && !step.next.ok()) return step.next.status();
  std::vector<Lease> leases;
  if (step.next.ok() && step.next->has_value()) leases.push_back(**step.next);
  if (absl::Status s =
          ReleaseIfClientWentAway(context, call, next.wait, leases);
      !s.ok()) {
    return s;
  }
  std::string text = absl::StrCat(
      "{\"acked\":", step.acked.ok() ? "true" : "false", ",\"leases\":[");
  if (!leases.empty()) AppendLeaseJson(leases[0], &text);
  text += "]";
  if (!step.acked.ok()) {
    absl::StrAppend(&text, ",\"ack_error\":", ErrorBody(step.acked));
  }
  if (!step.next.ok()) {
    absl::StrAppend(&text,
                    ",\"reserve_error\":", ErrorBody(step.next.status()));
  }
  text += "}";
  context.leases->PutAll(std::move(leases));
  return Reply::Text(200, std::move(text));
}

// POST /v1/jobs/{id}/ack: the ack, with the worker's result; with "next",
// also the next job's reservation (AckAndReserveNext()).
absl::StatusOr<Reply> Ack(const RouteContext& context, const Call& call) {
  if (absl::Status s =
          OnlyFields(call.body, {"token", "result", "result_base64", "next"});
      !s.ok()) {
    return s;
  }
  absl::StatusOr<uint64_t> token = TokenField(call.body);
  if (!token.ok()) return token.status();
  absl::StatusOr<std::string> result =
      BytesFromJson(call.body, "result", /*optional=*/true);
  if (!result.ok()) return result.status();
  absl::StatusOr<std::optional<NextReservation>> next =
      ReadNext(context, call.body);
  if (!next.ok()) return next.status();
  absl::StatusOr<Lease> lease =
      FindLease(context, call.path[0], *token, /*take=*/true);
  if (!lease.ok()) return lease.status();
  if (next->has_value()) {
    return AckAndReserveNext(context, call, *lease, *result, **next);
  }
  if (absl::Status s = context.scheduler->Ack(*lease, *result); !s.ok()) {
    return s;
  }
  return Reply{};
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
  std::vector<std::string> ids;
  ids.reserve(items->size());
  for (const LeaseName& item : *items) ids.push_back(item.id);
  return Reply{200, OutcomesJson("acked", ids, outcomes)};
}

}  // namespace

void AddLeaseRoutes(Router& router, const RouteContext& context) {
  Scheduler& scheduler = *context.scheduler;
  router.Post("/v1/topics/([^/]+)/reserve",
              [context](const Call& call) { return Reserve(context, call); });
  router.PostBulk("/v1/leases/ack", [context](const Call& call) {
    return AckMany(context, call);
  });
  router.Post(absl::StrCat(kJob, "/ack"),
              [context](const Call& call) { return Ack(context, call); });
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
