// Copyright delayq authors.
//
// Reserving jobs and finishing their leases. The fencing token travels with
// every lease: ack, fail, release and touch name the job and carry the
// token its reserve returned, and the store refuses a token that is no
// longer current (409 FAILED_PRECONDITION), as it refuses a slow worker of
// the library.

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "tools/delayq/values.h"
#include "tools/serve/json_codec.h"
#include "tools/serve/routes.h"

namespace delayq {
namespace serve {
namespace {

constexpr char kJob[] = "/v1/jobs/(.+)";
constexpr int kMaxReserve = 1000;

absl::StatusOr<Reply> Reserve(const RouteContext& context, const Call& call) {
  if (absl::Status s = OnlyFields(call.body, {"wait_ms", "max"}); !s.ok()) {
    return s;
  }
  absl::StatusOr<int64_t> max = IntField(call.body, "max", 1, 1, kMaxReserve);
  if (!max.ok()) return max.status();
  absl::StatusOr<int64_t> wait_ms =
      IntField(call.body, "wait_ms", 0, 0, INT64_MAX / 1'000'000);
  if (!wait_ms.ok()) return wait_ms.status();
  // Waits are bounded so that a client cannot hold a thread for ever, and
  // a draining server answers at once.
  absl::Duration wait =
      std::min(absl::Milliseconds(*wait_ms), context.max_wait);
  if (context.draining->load()) wait = absl::ZeroDuration();
  ++*context.reserves_waiting;
  absl::StatusOr<std::vector<Lease>> leases = context.scheduler->ReserveBatch(
      call.path[0], static_cast<int>(*max), wait);
  --*context.reserves_waiting;
  if (!leases.ok()) return leases.status();
  Json list = Json::array();
  for (const Lease& lease : *leases) list.push_back(LeaseToJson(lease));
  return Reply{200, Json{{"leases", std::move(list)}}};
}

// The lease a request names: the job as the store has it now, with the
// request's token. A job the store no longer has is left to the library to
// refuse.
absl::StatusOr<Lease> RequestLease(Scheduler& scheduler, const Call& call) {
  absl::StatusOr<uint64_t> token = TokenField(call.body);
  if (!token.ok()) return token.status();
  Lease lease;
  absl::StatusOr<Job> job = scheduler.Get(call.path[0]);
  if (job.ok()) {
    lease.job = *std::move(job);
  } else if (absl::IsNotFound(job.status())) {
    lease.job.id = call.path[0];
  } else {
    return job.status();
  }
  lease.token = *token;
  lease.deadline = lease.job.deadline;
  return lease;
}

// A lease route: checks the body's fields, finds the lease, runs `act`.
template <typename Act>
Route LeaseRoute(Scheduler& scheduler,
                 std::initializer_list<absl::string_view> fields, Act act) {
  std::vector<absl::string_view> allowed(fields);
  allowed.push_back("token");
  return [&scheduler, allowed, act](const Call& call) -> absl::StatusOr<Reply> {
    if (absl::Status s = OnlyFields(call.body, allowed); !s.ok()) return s;
    absl::StatusOr<Lease> lease = RequestLease(scheduler, call);
    if (!lease.ok()) return lease.status();
    return act(*lease, call.body);
  };
}

}  // namespace

void AddLeaseRoutes(Router& router, const RouteContext& context) {
  Scheduler& scheduler = *context.scheduler;
  router.Post("/v1/topics/([^/]+)/reserve",
              [context](const Call& call) { return Reserve(context, call); });
  router.Post(absl::StrCat(kJob, "/ack"),
              LeaseRoute(scheduler, {},
                         [&scheduler](const Lease& lease,
                                      const Json&) -> absl::StatusOr<Reply> {
                           if (absl::Status s = scheduler.Ack(lease); !s.ok()) {
                             return s;
                           }
                           return Reply{};
                         }));
  router.Post(
      absl::StrCat(kJob, "/fail"),
      LeaseRoute(
          scheduler, {"error"},
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
      LeaseRoute(scheduler, {"delay_ms"},
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
          scheduler, {},
          [&scheduler](Lease lease, const Json&) -> absl::StatusOr<Reply> {
            if (absl::Status s = scheduler.Touch(lease); !s.ok()) {
              return s;
            }
            return Reply{200, Json{{"deadline", cli::UtcText(lease.deadline)}}};
          }));
}

}  // namespace serve
}  // namespace delayq
