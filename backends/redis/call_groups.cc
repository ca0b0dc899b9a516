// Copyright delayq authors.
//
// call_groups.cc — Reserve(), Ack() and AckAndReserve() of threads that
// call at the same moment share script calls.
//
// Why: the server runs every script on its one thread, and most of a
// reserve's or an ack's time there is spent whatever the call holds: the
// call itself, the clock check, the topic's due, pause and limit checks,
// one write per index, one count per minute, the reply. Eight worker
// threads that each reserve and ack one job at a time pay all of it per
// job. In a group (src/common/group_commit.h) the callers that arrive while
// a call is under way go in the next call together: one reserve of all
// their jobs per topic, one ack_batch of all their leases.
//
// What a caller gets is what it would get alone, the group's callers taken
// one after the other in queue order: the reservation takes the jobs in
// ready order, each lease with a token of its own, and deals them out in
// that order; a caller that gets fewer than it asked is told of a limit
// that held jobs back (limited_until); the jobs the call's promotion moved
// are reported once, to the first caller with a report. A group's call
// runs at the latest `now` of its callers (calls microseconds apart: a
// lease's deadline may lie that much after its caller's now + ttr). Each
// ack gets its own outcome; an ack with a result goes alone, since
// ack_batch keeps none. AckAndReserve() callers together make one ack_batch
// and then one reserve per topic (two calls for the group, where each alone
// makes one ack_reserve). When a group's call fails, each of its callers
// gets the error, as a lone call's caller would. A lone caller makes the
// call it always made.

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "backends/redis/backend_impl.h"

namespace delayq {
namespace {

using Op = internal::GroupCommit::Op;

// The holder a reservation stores its leases with.
absl::string_view HolderOf(const ReserveReport* report) {
  return report == nullptr ? absl::string_view() : report->holder;
}

// Runs `call` in `group` and returns once it is answered: its op's body
// hands it to the group's runner through `calls`.
template <typename Call>
void Join(internal::GroupCommit& group, std::vector<Call*>& calls, Call* call) {
  group
      .Run([&] {
        calls.push_back(call);
        return absl::OkStatus();
      })
      .IgnoreError();
}

// In a runner: the calls of the group's ops, taken from `calls`.
template <typename Call>
std::vector<Call*> Take(absl::Span<Op* const> ops, std::vector<Call*>& calls) {
  for (Op* op : ops) op->result = op->body();
  std::vector<Call*> taken;
  taken.swap(calls);
  return taken;
}

}  // namespace

struct RedisBackend::ReserveCall {
  absl::string_view topic;
  int max;
  absl::Time now;
  ReserveReport* report;
  absl::StatusOr<std::vector<Lease>> leases;
};

struct RedisBackend::AckCall {
  absl::string_view id;
  uint64_t token;
  absl::Time now;
  // Where the jobs the ack settled go (nullptr: nowhere).
  std::vector<Settled>* settled;
  absl::Status acked;
};

struct RedisBackend::AckReserveCall {
  AckCall ack;
  absl::string_view result;
  ReserveCall reserve;
};

absl::StatusOr<std::vector<Lease>> RedisBackend::Reserve(
    absl::string_view topic, int max, absl::Time now, ReserveReport* report) {
  ReserveCall call{topic, std::max(max, 1), now, report, std::vector<Lease>()};
  Join(reserve_group_, reserve_calls_, &call);
  return std::move(call.leases);
}

absl::Status RedisBackend::Ack(absl::string_view id, uint64_t token,
                               absl::string_view result, absl::Time now,
                               std::vector<Settled>* settled) {
  if (!result.empty()) return AckNow(id, token, result, now, settled);
  AckCall call{id, token, now, settled, absl::OkStatus()};
  Join(ack_group_, ack_calls_, &call);
  return call.acked;
}

AckReserved RedisBackend::AckAndReserve(absl::string_view id, uint64_t token,
                                        absl::string_view result,
                                        absl::string_view topic, int max,
                                        absl::Time now, ReserveReport* report) {
  // The ack's settled jobs come first in the report, as ack_reserve's do.
  AckReserveCall call{
      AckCall{id, token, now, report == nullptr ? nullptr : &report->settled,
              absl::OkStatus()},
      result,
      ReserveCall{topic, std::max(max, 1), now, report, std::vector<Lease>()}};
  Join(ack_reserve_group_, ack_reserve_calls_, &call);
  AckReserved out;
  out.acked = std::move(call.ack.acked);
  out.leases = std::move(call.reserve.leases);
  return out;
}

void RedisBackend::RunReserveGroup(absl::Span<Op* const> ops) {
  const std::vector<ReserveCall*> calls = Take(ops, reserve_calls_);
  ReserveByTopic(calls);
}

void RedisBackend::ReserveByTopic(absl::Span<ReserveCall* const> calls) {
  std::vector<bool> taken(calls.size(), false);
  std::vector<ReserveCall*> part;
  for (size_t i = 0; i < calls.size(); ++i) {
    if (taken[i]) continue;
    part.clear();
    for (size_t k = i; k < calls.size(); ++k) {
      if (!taken[k] && calls[k]->topic == calls[i]->topic &&
          HolderOf(calls[k]->report) == HolderOf(calls[i]->report)) {
        part.push_back(calls[k]);
        taken[k] = true;
      }
    }
    ReserveTogether(part);
  }
}

void RedisBackend::ReserveTogether(absl::Span<ReserveCall* const> part) {
  if (part.size() == 1) {
    ReserveCall* c = part[0];
    c->leases = ReserveNow(c->topic, c->max, c->now, c->report);
    return;
  }
  int total = 0;
  absl::Time now = absl::InfinitePast();
  ReserveReport* first_report = nullptr;
  for (ReserveCall* c : part) {
    total += c->max;
    now = std::max(now, c->now);
    if (first_report == nullptr) first_report = c->report;
  }
  ReserveReport shared;
  shared.holder = std::string(HolderOf(part[0]->report));
  absl::StatusOr<std::vector<Lease>> got =
      ReserveNow(part[0]->topic, total, now, &shared);
  if (!got.ok()) {
    for (ReserveCall* c : part) c->leases = got.status();
    return;
  }
  if (first_report != nullptr) {
    for (Transition& t : shared.moved)
      first_report->moved.push_back(std::move(t));
    for (Settled& s : shared.settled)
      first_report->settled.push_back(std::move(s));
  }
  size_t next = 0;
  for (ReserveCall* c : part) {
    std::vector<Lease> mine;
    while (static_cast<int>(mine.size()) < c->max && next < got->size()) {
      mine.push_back(std::move((*got)[next++]));
    }
    if (static_cast<int>(mine.size()) < c->max && c->report != nullptr) {
      c->report->limited_until = shared.limited_until;
    }
    c->leases = std::move(mine);
  }
}

void RedisBackend::RunAckGroup(absl::Span<Op* const> ops) {
  const std::vector<AckCall*> calls = Take(ops, ack_calls_);
  if (calls.size() == 1) {
    AckCall* c = calls[0];
    c->acked = AckNow(c->id, c->token, /*result=*/"", c->now, c->settled);
    return;
  }
  AckTogether(calls);
}

void RedisBackend::AckTogether(absl::Span<AckCall* const> calls) {
  std::vector<Lease> leases(calls.size());
  absl::Time now = absl::InfinitePast();
  std::vector<Settled>* settled = nullptr;
  for (size_t i = 0; i < calls.size(); ++i) {
    leases[i].job.id = std::string(calls[i]->id);
    leases[i].token = calls[i]->token;
    now = std::max(now, calls[i]->now);
    if (settled == nullptr) settled = calls[i]->settled;
  }
  absl::StatusOr<std::vector<absl::Status>> acked =
      AckBatch(leases, now, settled);
  for (size_t i = 0; i < calls.size(); ++i) {
    calls[i]->acked = acked.ok() ? (*acked)[i] : acked.status();
  }
}

void RedisBackend::RunAckReserveGroup(absl::Span<Op* const> ops) {
  const std::vector<AckReserveCall*> calls = Take(ops, ack_reserve_calls_);
  bool results = false;
  for (AckReserveCall* c : calls) results = results || !c->result.empty();
  if (calls.size() == 1 || results) {
    for (AckReserveCall* c : calls) {
      AckReserved both =
          AckAndReserveNow(c->ack.id, c->ack.token, c->result, c->reserve.topic,
                           c->reserve.max, c->reserve.now, c->reserve.report);
      c->ack.acked = std::move(both.acked);
      c->reserve.leases = std::move(both.leases);
    }
    return;
  }
  // The acks first, as ack_reserve makes them: a lease they end frees a
  // place under the topic's concurrency cap before the reservations count.
  std::vector<AckCall*> acks;
  std::vector<ReserveCall*> reserves;
  for (AckReserveCall* c : calls) acks.push_back(&c->ack);
  AckTogether(acks);
  for (AckReserveCall* c : calls) {
    const absl::Status& acked = c->ack.acked;
    if (acked.ok() || absl::IsFailedPrecondition(acked)) {
      reserves.push_back(&c->reserve);
    } else {
      // Not asked: the store did not answer the ack.
      c->reserve.leases = acked;
    }
  }
  ReserveByTopic(reserves);
}

}  // namespace delayq
