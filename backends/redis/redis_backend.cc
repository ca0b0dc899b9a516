// Copyright delayq authors.

#include <algorithm>
#include <cmath>
#include <iterator>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "backends/redis/backend_impl.h"
#include "backends/redis/client/cluster.h"
#include "backends/redis/client/sentinel.h"
#include "backends/redis/internal/keys.h"
#include "backends/redis/internal/news.h"
#include "backends/redis/internal/record.h"
#include "backends/redis/internal/replies.h"
#include "backends/redis/internal/script_calls.h"
#include "backends/redis/internal/scripts.h"
#include "backends/redis/sharded_backend.h"
#include "src/common/contract_errors.h"
#include "src/common/lease_token.h"
#include "src/common/list_cursor.h"
#include "src/common/status_macros.h"

namespace delayq {
namespace {

using redis_internal::AppendAfter;
using redis_internal::AppendArgument;
using redis_internal::AppendExtras;
using redis_internal::AppendSpec;
using redis_internal::ArgList;
using redis_internal::ClampMicros;
using redis_internal::DecodeRecord;
using redis_internal::DurationMicros;
using redis_internal::Int;
using redis_internal::ParseLease;
using redis_internal::ParseSettledFrom;
using redis_internal::ParseSnapshots;
using redis_internal::ParseTransition;
using redis_internal::Reply;
using redis_internal::Str;
using redis_internal::TimeOf;
using redis_internal::ToCall;
using redis_internal::Unexpected;
using redis_internal::Word;

// The data layout this code reads and writes, recorded in "{ns}:meta" by the
// first backend to open a namespace. A change to what the scripts store
// bumps it: 1 (not recorded) had hex ready members and a counts hash per
// topic; 2 binary ready members biased by 2^53, which lose the last bit of
// run_at; 3 biases them by 2^52; 4 keeps every job as one record in a
// shared hash and delayed jobs in their topic's set only (no delay buckets);
// 5 adds expiry and dedup windows (record values 17-19, the expiring sets
// and the held ids); 6 done jobs (record values 20-23, state 4, the done
// sets) and when dead jobs died; 7 who holds each lease and since when
// (record values 24-25, while reserved); 8 jobs that wait for others
// (record values 26-28, state 5, the waiting and dependants sets); 9
// batches (record values 29-34, scripts/lib/batch.lua) and a waiting job's
// count of pending dependencies in the pending hash instead of its record
// (a record of layout 8 that holds one counts off there). A namespace of
// layout kOldestReadable or later is taken over in place: its records and
// keys are layout 9's without them (an older delayq refuses a layout-9
// namespace rather than misread its records).
constexpr int kLayout = 9;
// RedisOptions::shards at most.
constexpr int kMaxShards = 256;
constexpr int kOldestReadable = 4;

// The pool's options for `o`; with TLS, the context every connection
// shares, which loads the files `o` names.
absl::StatusOr<redis_internal::PoolOptions> PoolOptionsFor(
    const RedisOptions& o, absl::string_view ns) {
  redis_internal::PoolOptions p;
  p.host = o.host;
  p.port = o.port;
  p.unix_socket = o.unix_socket;
  p.password = o.password;
  p.username = o.username;
  p.db = o.db;
  p.connect_timeout = o.connect_timeout;
  p.command_timeout = o.command_timeout;
  p.size = o.pool_size;
  if (o.tls.enabled) {
    redis_internal::TlsSettings tls;
    tls.ca_file = o.tls.ca_file;
    tls.cert_file = o.tls.cert_file;
    tls.key_file = o.tls.key_file;
    tls.server_name = o.tls.server_name;
    tls.insecure = o.tls.insecure;
    DQ_ASSIGN_OR_RETURN(p.tls, redis_internal::TlsContext::Create(tls));
  }
  if (!o.cluster_nodes.empty()) {
    std::vector<redis_internal::HostPort> seeds;
    for (const RedisEndpoint& n : o.cluster_nodes) {
      seeds.push_back({n.host, n.port});
    }
    const int slot =
        redis_internal::KeySlot(redis_internal::KeyLayout(ns).prefix());
    p.locator = std::make_shared<redis_internal::SlotLocator>(std::move(seeds),
                                                              slot, p);
  }
  if (!o.sentinels.empty()) {
    std::vector<redis_internal::HostPort> sentinels;
    for (const RedisEndpoint& s : o.sentinels) {
      sentinels.push_back({s.host, s.port});
    }
    p.locator = std::make_shared<redis_internal::PrimaryLocator>(
        std::move(sentinels), o.sentinel_master, o.sentinel_password,
        o.connect_timeout, o.command_timeout, p.tls);
  }
  return p;
}

absl::Status ValidateOptions(const RedisOptions& o) {
  auto bad = [](absl::string_view what) {
    return absl::InvalidArgumentError(absl::StrCat("redis options: ", what));
  };
  if (!o.sentinels.empty()) {
    if (o.sentinel_master.empty()) return bad("sentinel_master is empty");
    for (const RedisEndpoint& s : o.sentinels) {
      if (s.host.empty()) return bad("a sentinel's host is empty");
      if (s.port < 1 || s.port > 65535) {
        return bad(
            absl::StrCat("a sentinel's port ", s.port, " is not in 1..65535"));
      }
    }
  } else if (o.unix_socket.empty() && o.host.empty()) {
    return bad("host is empty");
  }
  if (!o.cluster_nodes.empty()) {
    if (!o.sentinels.empty())
      return bad("cluster_nodes and sentinels both set");
    if (o.db != 0) return bad("a cluster has only db 0");
    for (const RedisEndpoint& n : o.cluster_nodes) {
      if (n.host.empty()) return bad("a cluster node's host is empty");
      if (n.port < 1 || n.port > 65535) {
        return bad(absl::StrCat("a cluster node's port ", n.port,
                                " is not in 1..65535"));
      }
    }
  }
  if (o.tls.enabled && o.sentinels.empty() && o.cluster_nodes.empty() &&
      !o.unix_socket.empty()) {
    return bad("TLS is not spoken over a Unix socket");
  }
  if (!o.tls.enabled && (!o.tls.ca_file.empty() || !o.tls.cert_file.empty() ||
                         !o.tls.key_file.empty() ||
                         !o.tls.server_name.empty() || o.tls.insecure)) {
    return bad("TLS settings are given but tls.enabled is false");
  }
  if (!o.username.empty() && o.password.empty()) {
    return bad("a username needs a password");
  }
  if (o.wait_replicas < 0 || o.wait_replicas > 64) {
    return bad(
        absl::StrCat("wait_replicas ", o.wait_replicas, " is not in 0..64"));
  }
  if (o.wait_replicas > 0 && (o.wait_timeout < absl::Milliseconds(1) ||
                              o.wait_timeout >= o.command_timeout)) {
    return bad(absl::StrCat("wait_timeout ",
                            absl::FormatDuration(o.wait_timeout),
                            " must be at least 1ms and shorter than "
                            "command_timeout ",
                            absl::FormatDuration(o.command_timeout)));
  }
  // sockaddr_un holds 107 bytes and a NUL; a longer path would be cut short
  // and name another socket.
  if (o.unix_socket.size() > 107) {
    return bad(absl::StrCat("unix_socket path is ", o.unix_socket.size(),
                            " bytes; at most 107 fit a socket address"));
  }
  if (o.port < 1 || o.port > 65535) return bad("port must be in 1..65535");
  if (o.db < 0) return bad("db must be >= 0");
  if (o.ns.empty() || o.ns.find_first_of("{}") != std::string::npos) {
    return bad("namespace must be non-empty and contain no braces");
  }
  if (o.shards < 1 || o.shards > kMaxShards) {
    return bad(absl::StrCat("shards must be in 1..", kMaxShards));
  }
  if (o.counts.window < absl::Minutes(1)) {
    return bad("counts window must be at least a minute");
  }
  if (o.delay_buckets < 1 || o.delay_buckets > 64) {
    return bad("delay_buckets must be in 1..64");
  }
  if (o.dead_cap != 0) return bad(kNoDeadCap);
  if (o.pool_size < 1) return bad("pool_size must be >= 1");
  if (o.max_clock_skew < absl::ZeroDuration()) {
    return bad("max_clock_skew must be >= 0");
  }
  if (o.reserve_promote_limit < 1) {
    return bad("reserve_promote_limit must be >= 1");
  }
  if (o.connect_timeout <= absl::ZeroDuration() ||
      o.command_timeout <= absl::ZeroDuration()) {
    return bad("timeouts must be positive");
  }
  return absl::OkStatus();
}

// FailedPrecondition when the server may evict any key (maxmemory-policy
// allkeys-*), and with it jobs. A server that hides INFO cannot be checked.
absl::Status CheckNoEviction(redis_internal::ConnectionPool& pool) {
  absl::StatusOr<std::vector<Reply>> replies =
      pool.Pipeline({{"INFO", "memory"}});
  if (!replies.ok()) return replies.status();
  const redisReply* r = (*replies)[0].get();
  if (r->type != REDIS_REPLY_STRING && r->type != REDIS_REPLY_STATUS) {
    return absl::OkStatus();
  }
  for (absl::string_view line :
       absl::StrSplit(absl::string_view(r->str, r->len), "\r\n")) {
    if (!absl::ConsumePrefix(&line, "maxmemory_policy:")) continue;
    if (!absl::StartsWith(line, "allkeys-")) return absl::OkStatus();
    return absl::FailedPreconditionError(absl::StrCat(
        "redis: the server's maxmemory-policy is ", line,
        ", which deletes any key, and so jobs, when memory runs short; set "
        "it to noeviction (writes are then refused when memory is full), or "
        "accept losing jobs with allow_eviction=1"));
  }
  return absl::OkStatus();
}

// ARGV[2] of the timed scripts (scripts/lib/clock.lua). A call's latency
// makes the caller's clock look behind the server's, never ahead, so the
// tolerance behind also covers the longest a call may take.
std::string ClockMode(const RedisOptions& o) {
  if (o.time_source == RedisOptions::TimeSource::kServer) return "1";
  if (o.max_clock_skew == absl::InfiniteDuration()) return "0";
  return absl::StrCat(
      absl::ToInt64Microseconds(o.max_clock_skew), ":",
      absl::ToInt64Microseconds(o.max_clock_skew + o.command_timeout));
}

// The counting scripts' ARGV[3] (scripts/lib/counts.lua).
std::string CountsArg(const CountsOptions& counts) {
  if (!counts.enabled) return "0";
  return absl::StrCat(absl::ToInt64Seconds(counts.window));
}

// The first fencing token of a reserve call (src/common/lease_token.h): random,
// so that tokens stay unique for a job however much of the store Redis loses.
std::string FirstToken() {
  return absl::StrCat(internal::NewFirstLeaseToken());
}

}  // namespace

RedisBackend::RedisBackend(const RedisOptions& options, int shard,
                           redis_internal::PoolOptions pool)
    : options_(options),
      keys_(redis_internal::ShardNamespace(options.ns, shard)),
      news_channel_(keys_.NewsChannel()),
      clock_mode_(ClockMode(options)),
      counts_arg_(CountsArg(options.counts)),
      pool_(std::move(pool)),
      scripts_(&pool_, redis_internal::WaitOptions{options.wait_replicas,
                                                   options.wait_timeout}) {}

absl::StatusOr<std::unique_ptr<RedisBackend>> RedisBackend::Open(
    const RedisOptions& options) {
  return OpenShard(options, 0);
}

absl::StatusOr<std::unique_ptr<RedisBackend>> RedisBackend::OpenShard(
    const RedisOptions& options, int shard) {
  if (absl::Status s = ValidateOptions(options); !s.ok()) return s;
  if (shard < 0 || shard >= options.shards) {
    return absl::InvalidArgumentError(
        absl::StrCat("redis: shard ", shard, " of ", options.shards));
  }
  DQ_ASSIGN_OR_RETURN(redis_internal::PoolOptions pool,
                      PoolOptionsFor(options, redis_internal::ShardNamespace(
                                                  options.ns, shard)));
  std::unique_ptr<RedisBackend> backend(
      new RedisBackend(options, shard, std::move(pool)));
  if (absl::Status s = backend->scripts_.LoadAll(absl::MakeConstSpan(
          redis_internal::kScriptSources, redis_internal::kScriptSourceCount));
      !s.ok())
    return s;
  if (const auto& locator = backend->pool_.options().locator) {
    if (absl::Status s = locator->StartWatching(); !s.ok()) return s;
  }
  if (!options.allow_key_eviction) {
    if (absl::Status s = CheckNoEviction(backend->pool_); !s.ok()) return s;
  }
  auto open = backend->Keyed<redis_internal::OpenArgs>();
  open.meta = backend->keys_.Meta();
  open.topics = backend->keys_.Topics();
  open.layout = absl::StrCat(kLayout);
  open.oldest_readable = absl::StrCat(kOldestReadable);
  absl::StatusOr<Reply> r = backend->RunOne(ToCall(std::move(open)));
  if (!r.ok()) return r.status();
  const redisReply* reply = r->get();
  const std::string word = Word(reply);
  if (word == redis_internal::kOldLayout) {
    return absl::FailedPreconditionError(absl::StrCat(
        "redis: namespace '", options.ns,
        "' holds jobs in the data layout of an earlier delayq, which this one "
        "cannot read; drain it with that version (and stop every process of "
        "it) or use another namespace"));
  }
  if (word == redis_internal::kNewerLayout && reply->elements == 2) {
    return absl::FailedPreconditionError(absl::StrCat(
        "redis: namespace '", options.ns, "' was written by a newer delayq ",
        "(data layout ", Str(reply->element[1]), "; this one writes ", kLayout,
        "); left untouched"));
  }
  if (word != "OK") return Unexpected(reply, "open");
  if (absl::Status s = backend->CheckShardMeta(shard); !s.ok()) return s;
  return backend;
}

absl::Status RedisBackend::CheckShardMeta(int shard) {
  auto a = Keyed<redis_internal::ShardMetaArgs>();
  a.meta = keys_.Meta();
  a.topics = keys_.Topics();
  a.limits = keys_.Limits();
  a.paused = keys_.Paused();
  a.shards = absl::StrCat(options_.shards);
  a.shard = absl::StrCat(shard);
  DQ_ASSIGN_OR_RETURN(Reply r, RunOne(ToCall(std::move(a))));
  const std::string word = Word(r.get());
  if (word == redis_internal::kOk) return absl::OkStatus();
  if (word != redis_internal::kOtherShards || r->elements != 3) {
    return Unexpected(r.get(), "shard_meta");
  }
  const std::string shards = Str(r->element[1]);
  const std::string index = Str(r->element[2]);
  if (index != absl::StrCat(shard)) {
    return absl::FailedPreconditionError(
        absl::StrCat("redis: the keys of namespace '", options_.ns, "' shard ",
                     shard, " (", keys_.prefix(), ") belong to shard ", index,
                     " of ", shards, " of another namespace; left untouched"));
  }
  return absl::FailedPreconditionError(absl::StrCat(
      "redis: namespace '", options_.ns, "' was written with shards=", shards,
      " and is opened with shards=", options_.shards,
      "; the shard count of a namespace cannot change (drain it, or use "
      "another namespace); left untouched"));
}

std::string RedisBackend::Micros(absl::Time t) const {
  return absl::StrCat(ClampMicros(t));
}

absl::StatusOr<Reply> RedisBackend::RunOne(ScriptCall call) {
  if (!call.ok()) return call.status();
  return scripts_.RunOne(*std::move(call));
}

absl::StatusOr<Reply> RedisBackend::Run(ScriptCall call, absl::string_view id) {
  DQ_ASSIGN_OR_RETURN(Reply r, RunOne(std::move(call)));
  const std::string word = Word(r.get());
  const bool detail = r->type == REDIS_REPLY_ARRAY && r->elements == 2;
  if (word == redis_internal::kStale) return internal::StaleLease(id);
  if (word == redis_internal::kNotFound) return internal::NoSuchJob(id);
  if (word == redis_internal::kNotDead && detail) {
    return internal::NotDead(id, Str(r->element[1]));
  }
  if (word == redis_internal::kNotDelayed && detail) {
    return internal::NotDelayed(id, Str(r->element[1]));
  }
  if (word == redis_internal::kExists && detail) {
    return internal::IdInUse(Str(r->element[1]));
  }
  if (word == redis_internal::kBusy && detail) {
    return internal::NotReplaceable(id, Str(r->element[1]));
  }
  if (word == redis_internal::kOtherTopic && detail) {
    return internal::OtherTopic(id, Str(r->element[1]));
  }
  return r;
}

absl::Status RedisBackend::RunForOk(ScriptCall call, absl::string_view id) {
  if (!call.ok()) return call.status();
  const absl::string_view script = call->script;  // a literal's name
  DQ_ASSIGN_OR_RETURN(Reply r, Run(std::move(call), id));
  if (Word(r.get()) == redis_internal::kOk) return absl::OkStatus();
  return Unexpected(r.get(), script);
}

absl::Status RedisBackend::RunForSettled(ScriptCall call, absl::string_view id,
                                         std::vector<Settled>* settled) {
  if (!call.ok()) return call.status();
  const absl::string_view script = call->script;  // a literal's name
  DQ_ASSIGN_OR_RETURN(Reply r, Run(std::move(call), id));
  if (Word(r.get()) != redis_internal::kOk) return Unexpected(r.get(), script);
  return ParseSettledFrom(r.get(), 1, script, settled);
}

absl::Status RedisBackend::Add(absl::Span<const NewJob> jobs, absl::Time now) {
  return Store(jobs, /*opens_batch=*/false, now);
}

absl::Status RedisBackend::Store(absl::Span<const NewJob> jobs,
                                 bool opens_batch, absl::Time now) {
  if (jobs.empty()) return absl::OkStatus();
  auto a = Timed<redis_internal::AddArgs>(now);
  a.seq = keys_.Seq();
  a.topics = keys_.Topics();
  a.counts = counts_arg_;
  AppendJobs(jobs, &a.batch, opens_batch);
  DQ_ASSIGN_OR_RETURN(Reply r, Run(ToCall(std::move(a)), ""));
  const redisReply* reply = r.get();
  const std::string word = Word(reply);
  if (word == redis_internal::kOk) return absl::OkStatus();
  if (word == redis_internal::kNoDependency && reply->elements == 3) {
    return internal::NoSuchDependency(Str(reply->element[1]),
                                      Str(reply->element[2]));
  }
  if (word == redis_internal::kNoBatch && reply->elements == 2) {
    return internal::NoSuchBatch(Str(reply->element[1]));
  }
  if (word == redis_internal::kClosed && reply->elements == 2) {
    return internal::BatchClosed(Str(reply->element[1]));
  }
  return Unexpected(reply, "add");
}

absl::Status RedisBackend::OpenBatch(const NewJob& completion, absl::Time now) {
  return Store({&completion, 1}, /*opens_batch=*/true, now);
}

absl::Status RedisBackend::CloseBatch(absl::string_view id, absl::Time now,
                                      std::vector<Settled>* settled) {
  auto a = Timed<redis_internal::BatchCloseArgs>(now);
  a.id = std::string(id);
  DQ_ASSIGN_OR_RETURN(Reply r, RunOne(ToCall(std::move(a))));
  const std::string word = Word(r.get());
  if (word == redis_internal::kOk) {
    return ParseSettledFrom(r.get(), 1, "batch_close", settled);
  }
  if (word == redis_internal::kNoBatch) return internal::NoSuchBatch(id);
  return Unexpected(r.get(), "batch_close");
}

absl::StatusOr<Batch> RedisBackend::GetBatch(absl::string_view id) {
  absl::StatusOr<std::vector<Reply>> replies =
      pool_.Pipeline({{"HGET", keys_.Jobs(), std::string(id)}});
  if (!replies.ok()) return replies.status();
  const redisReply* r = (*replies)[0].get();
  Batch batch;
  if (r->type != REDIS_REPLY_STRING ||
      !redis_internal::DecodeBatch(absl::string_view(r->str, r->len), &batch)) {
    return internal::NoSuchBatch(id);
  }
  batch.id = std::string(id);
  batch.completion_id = batch.id;
  return batch;
}

void RedisBackend::AppendJobs(absl::Span<const NewJob> jobs, ArgList* list,
                              bool opens_batch) {
  // Written straight into the request: a batch of jobs is the one call
  // whose arguments are worth not copying.
  std::string& out = list->encoded;
  size_t size = 0;
  for (const NewJob& j : jobs) {
    size += j.id.size() + j.topic.size() + j.payload.size() + 200;
  }
  out.reserve(size);
  std::string spec;
  for (const NewJob& j : jobs) {
    AppendArgument(j.id, &out);
    AppendArgument(j.topic, &out);
    AppendArgument(absl::AlphaNum(j.priority).Piece(), &out);
    AppendArgument(absl::AlphaNum(ClampMicros(j.run_at)).Piece(), &out);
    spec.clear();
    AppendSpec(j, &spec);
    AppendArgument(spec, &out);
    AppendArgument(j.payload, &out);
    spec.clear();
    AppendExtras(j, &spec);
    AppendArgument(spec, &out);
    spec.clear();
    AppendAfter(j, &spec);
    AppendArgument(spec, &out);
    // in_batch: "=" opens a batch, "+" and its id joins one (add-5.lua).
    if (opens_batch) {
      AppendArgument("=", &out);
    } else {
      AppendArgument(j.batch.empty() ? "" : absl::StrCat("+", j.batch), &out);
    }
  }
  list->encoded_count += 9 * jobs.size();
}

absl::Status RedisBackend::CheckIdsFree(absl::Span<const NewJob> jobs,
                                        absl::Time now) {
  if (jobs.empty()) return absl::OkStatus();
  auto a = Timed<redis_internal::CheckIdsArgs>(now);
  a.held = keys_.Held();
  a.ids.values.reserve(jobs.size());
  for (const NewJob& j : jobs) a.ids.values.push_back(j.id);
  return RunForOk(ToCall(std::move(a)), "");
}

absl::StatusOr<int> RedisBackend::Withdraw(absl::Span<const std::string> ids,
                                           absl::Time now) {
  if (ids.empty()) return 0;
  auto a = Timed<redis_internal::WithdrawArgs>(now);
  a.counts = counts_arg_;
  a.ids.values.assign(ids.begin(), ids.end());
  DQ_ASSIGN_OR_RETURN(Reply r, Run(ToCall(std::move(a)), ""));
  if (Word(r.get()) != redis_internal::kOk || r->elements != 2) {
    return Unexpected(r.get(), "withdraw");
  }
  return static_cast<int>(Int(r->element[1]));
}

absl::StatusOr<std::vector<Lease>> RedisBackend::Reserve(
    absl::string_view topic, int max, absl::Time now, ReserveReport* report) {
  auto a = Timed<redis_internal::ReserveArgs>(now);
  a.ready = keys_.Ready(topic);
  a.counts = counts_arg_;
  a.topic = std::string(topic);
  a.max = absl::StrCat(std::max(max, 1));
  a.promote_max = absl::StrCat(options_.reserve_promote_limit);
  a.first_token = FirstToken();
  a.holder = report == nullptr ? "" : report->holder;
  absl::StatusOr<Reply> r = RunOne(ToCall(std::move(a)));
  if (!r.ok()) return r.status();
  const redisReply* reply = r->get();
  if (Word(reply) != redis_internal::kOk) return Unexpected(reply, "reserve");
  return ParseReserved(reply, 1, "reserve", report);
}

absl::StatusOr<std::vector<Lease>> RedisBackend::ParseReserved(
    const redisReply* reply, size_t first, absl::string_view script,
    ReserveReport* report) {
  if (reply->elements < first + 2 ||
      reply->element[first]->type != REDIS_REPLY_ARRAY) {
    return Unexpected(reply, script);
  }
  if (report != nullptr) {
    // The moves, each with the jobs it settled; ack_reserve's ack puts
    // the jobs it settled first.
    const redisReply* list = reply->element[first];
    for (size_t i = 0; i < list->elements; ++i) {
      const redisReply* e = list->element[i];
      if (redis_internal::IsSettled(e)) {
        absl::StatusOr<Settled> s = redis_internal::ParseSettled(e, script);
        if (!s.ok()) return s.status();
        report->settled.push_back(*std::move(s));
        continue;
      }
      absl::StatusOr<Transition> t =
          ParseTransition(e, script, &report->settled);
      if (!t.ok()) return t.status();
      report->moved.push_back(*std::move(t));
    }
    const std::string limited = Str(reply->element[first + 1]);
    int64_t until_us;
    if (limited == "released") {
      report->limited_until = absl::InfiniteFuture();
    } else if (absl::SimpleAtoi(limited, &until_us)) {
      report->limited_until = absl::FromUnixMicros(until_us);
    }
  }
  std::vector<Lease> out;
  out.reserve(reply->elements - first - 2);
  for (size_t i = first + 2; i < reply->elements; ++i) {
    absl::StatusOr<Lease> lease = ParseLease(reply->element[i]);
    if (!lease.ok()) return lease.status();
    out.push_back(*std::move(lease));
  }
  return out;
}

AckReserved RedisBackend::AckAndReserve(absl::string_view id, uint64_t token,
                                        absl::string_view result,
                                        absl::string_view topic, int max,
                                        absl::Time now, ReserveReport* report) {
  auto a = Timed<redis_internal::AckReserveArgs>(now);
  a.ready = keys_.Ready(topic);
  a.counts = counts_arg_;
  a.id = std::string(id);
  a.token = absl::StrCat(token);
  a.result = std::string(result);
  a.topic = std::string(topic);
  a.max = absl::StrCat(std::max(max, 1));
  a.promote_max = absl::StrCat(options_.reserve_promote_limit);
  a.first_token = FirstToken();
  a.holder = report == nullptr ? "" : report->holder;
  AckReserved out;
  absl::StatusOr<Reply> r = RunOne(ToCall(std::move(a)));
  if (!r.ok()) {
    out.acked = r.status();
    out.leases = r.status();
    return out;
  }
  const redisReply* reply = r->get();
  const std::string acked =
      reply->elements > 1 ? Str(reply->element[1]) : std::string();
  if (Word(reply) != redis_internal::kOk ||
      (acked != redis_internal::kOk && acked != redis_internal::kStale)) {
    out.acked = Unexpected(reply, "ack_reserve");
    out.leases = out.acked;
    return out;
  }
  out.acked = acked == redis_internal::kOk ? absl::OkStatus()
                                           : internal::StaleLease(id);
  out.leases = ParseReserved(reply, 2, "ack_reserve", report);
  return out;
}

absl::Status RedisBackend::Ack(absl::string_view id, uint64_t token,
                               absl::string_view result, absl::Time now,
                               std::vector<Settled>* settled) {
  auto a = Timed<redis_internal::AckArgs>(now);
  a.counts = counts_arg_;
  a.id = std::string(id);
  a.token = absl::StrCat(token);
  a.result = std::string(result);
  return RunForSettled(ToCall(std::move(a)), id, settled);
}

absl::StatusOr<std::vector<absl::Status>> RedisBackend::AckBatch(
    absl::Span<const Lease> leases, absl::Time now,
    std::vector<Settled>* settled) {
  std::vector<absl::Status> out;
  if (leases.empty()) return out;
  auto a = Timed<redis_internal::AckBatchArgs>(now);
  a.counts = counts_arg_;
  a.leases.values.reserve(2 * leases.size());
  for (const Lease& l : leases) {
    a.leases.values.push_back(l.job.id);
    a.leases.values.push_back(absl::StrCat(l.token));
  }
  absl::StatusOr<Reply> r = RunOne(ToCall(std::move(a)));
  if (!r.ok()) return r.status();
  const redisReply* reply = r->get();
  if (Word(reply) != redis_internal::kOk ||
      reply->elements < leases.size() + 1) {
    return Unexpected(reply, "ack_batch");
  }
  DQ_RETURN_IF_ERROR(
      ParseSettledFrom(reply, leases.size() + 1, "ack_batch", settled));
  out.reserve(leases.size());
  for (size_t i = 0; i < leases.size(); ++i) {
    const std::string word = Str(reply->element[i + 1]);
    if (word == redis_internal::kOk) {
      out.push_back(absl::OkStatus());
    } else if (word == redis_internal::kStale) {
      out.push_back(internal::StaleLease(leases[i].job.id));
    } else {
      out.push_back(Unexpected(reply, "ack_batch"));
    }
  }
  return out;
}

absl::StatusOr<FailOutcome> RedisBackend::Fail(
    absl::string_view id, uint64_t token, absl::string_view error,
    absl::Time retry_at, absl::Time now, std::vector<Settled>* settled) {
  auto a = Timed<redis_internal::FailArgs>(now);
  a.counts = counts_arg_;
  a.id = std::string(id);
  a.token = absl::StrCat(token);
  a.error = std::string(error);
  a.retry_at = Micros(retry_at);
  DQ_ASSIGN_OR_RETURN(Reply r, Run(ToCall(std::move(a)), id));
  const std::string word = Word(r.get());
  if (word == redis_internal::kRetry) return FailOutcome::kRetry;
  if (word == redis_internal::kDead) {
    DQ_RETURN_IF_ERROR(ParseSettledFrom(r.get(), 1, "fail", settled));
    return FailOutcome::kDead;
  }
  return Unexpected(r.get(), "fail");
}

absl::Status RedisBackend::Release(absl::string_view id, uint64_t token,
                                   absl::Time run_at, absl::Time now) {
  auto a = Timed<redis_internal::ReleaseArgs>(now);
  a.id = std::string(id);
  a.token = absl::StrCat(token);
  a.run_at = Micros(run_at);
  return RunForOk(ToCall(std::move(a)), id);
}

absl::StatusOr<absl::Time> RedisBackend::Touch(absl::string_view id,
                                               uint64_t token, absl::Time now) {
  auto a = Timed<redis_internal::TouchArgs>(now);
  a.id = std::string(id);
  a.token = absl::StrCat(token);
  DQ_ASSIGN_OR_RETURN(Reply r, Run(ToCall(std::move(a)), id));
  if (Word(r.get()) == redis_internal::kOk && r->elements == 2) {
    return TimeOf(r->element[1]);
  }
  return Unexpected(r.get(), "touch");
}

absl::Status RedisBackend::Cancel(absl::string_view id, absl::Time now,
                                  std::vector<Settled>* settled) {
  auto a = Timed<redis_internal::CancelArgs>(now);
  a.counts = counts_arg_;
  a.id = std::string(id);
  return RunForSettled(ToCall(std::move(a)), id, settled);
}

absl::StatusOr<Job> RedisBackend::Get(absl::string_view id) {
  absl::StatusOr<std::vector<Reply>> replies =
      pool_.Pipeline({{"HGET", keys_.Jobs(), std::string(id)}});
  if (!replies.ok()) return replies.status();
  const redisReply* r = (*replies)[0].get();
  if (r->type == REDIS_REPLY_ERROR) {
    return redis_internal::ErrorReplyStatus(Str(r));
  }
  if (r->type == REDIS_REPLY_NIL) return internal::NoSuchJob(id);
  Lease lease;
  if (r->type != REDIS_REPLY_STRING ||
      !DecodeRecord(absl::string_view(r->str, r->len), &lease)) {
    return absl::InternalError(
        absl::StrCat("redis: job '", id, "' has a malformed record"));
  }
  lease.job.id = std::string(id);
  return std::move(lease.job);
}

absl::StatusOr<std::vector<Job>> RedisBackend::List(absl::string_view topic,
                                                    JobState state, int limit) {
  if (limit <= 0) return std::vector<Job>();
  DQ_ASSIGN_OR_RETURN(JobPage page, ListPage(topic, state, limit, ""));
  return std::move(page.jobs);
}

absl::StatusOr<JobPage> RedisBackend::ListPage(absl::string_view topic,
                                               JobState state, int limit,
                                               absl::string_view cursor) {
  JobPage page;
  if (limit <= 0) return page;
  // One job more than the page shows whether another page follows.
  DQ_ASSIGN_OR_RETURN(std::vector<PlacedJob> placed,
                      ListAfter(topic, state, limit + 1, cursor));
  for (size_t i = 0; i < placed.size() && i < static_cast<size_t>(limit); ++i) {
    page.jobs.push_back(std::move(placed[i].job));
  }
  if (placed.size() > static_cast<size_t>(limit)) {
    page.next_cursor = std::move(placed[limit - 1].cursor);
  }
  return page;
}

// A cursor is the score and the member of the position in the state's set
// (list-3.lua): the score an integer, the member any bytes.
absl::StatusOr<std::vector<RedisBackend::PlacedJob>> RedisBackend::ListAfter(
    absl::string_view topic, JobState state, int max,
    absl::string_view cursor) {
  auto a = Keyed<redis_internal::ListArgs>();
  a.after_score = "";
  a.after_member = "";
  if (!cursor.empty()) {
    DQ_ASSIGN_OR_RETURN(internal::ListCursor after,
                        internal::DecodeListCursor(cursor, state, 2));
    DQ_ASSIGN_OR_RETURN(int64_t score, internal::CursorInt(after, 0));
    // Every member is a job's: never empty.
    if (after.parts[1].empty()) {
      return absl::InvalidArgumentError(
          "bad cursor: not a cursor that this store gave");
    }
    a.after_score = absl::StrCat(score);
    a.after_member = std::move(after.parts[1]);
  }
  switch (state) {
    case JobState::kReady:
      a.set = keys_.Ready(topic);
      break;
    case JobState::kDelayed:
      a.set = keys_.TopicDelayed(topic);
      break;
    case JobState::kReserved:
      a.set = keys_.TopicReserved(topic);
      break;
    case JobState::kDead:
      a.set = keys_.Dead(topic);
      break;
    case JobState::kDone:
      a.set = keys_.TopicDone(topic);
      break;
    case JobState::kWaiting:
      a.set = keys_.TopicWaiting(topic);
      break;
  }
  a.state = std::string(JobStateName(state));
  a.limit = absl::StrCat(max);
  absl::StatusOr<Reply> r = RunOne(ToCall(std::move(a)));
  if (!r.ok()) return r.status();
  const redisReply* reply = r->get();
  if (Word(reply) != redis_internal::kOk) return Unexpected(reply, "list");
  std::vector<PlacedJob> out;
  for (size_t i = 1; i < reply->elements; ++i) {
    const redisReply* e = reply->element[i];
    double score = 0;
    if (e->type != REDIS_REPLY_ARRAY || e->elements != 3 ||
        !absl::SimpleAtod(Str(e->element[2]), &score)) {
      return Unexpected(reply, "list");
    }
    DQ_ASSIGN_OR_RETURN(Lease lease,
                        redis_internal::ParseSnapshot(e->element[0]));
    internal::ListCursor position;
    position.state = state;
    position.parts = {absl::StrCat(static_cast<int64_t>(std::llround(score))),
                      Str(e->element[1])};
    out.push_back({std::move(lease.job), internal::EncodeListCursor(position)});
  }
  return out;
}

absl::StatusOr<TopicStats> RedisBackend::Stats(absl::string_view topic) {
  // The sizes of the topic's six sets, read by one script so that a job
  // moving between them meanwhile is counted once.
  auto a = Keyed<redis_internal::StatsArgs>();
  a.tdelayed = keys_.TopicDelayed(topic);
  a.ready = keys_.Ready(topic);
  a.treserved = keys_.TopicReserved(topic);
  a.dead = keys_.Dead(topic);
  a.tdone = keys_.TopicDone(topic);
  a.twaiting = keys_.TopicWaiting(topic);
  absl::StatusOr<Reply> r = RunOne(ToCall(std::move(a)));
  if (!r.ok()) return r.status();
  const redisReply* reply = r->get();
  if (Word(reply) != redis_internal::kOk || reply->elements != 7) {
    return Unexpected(reply, "stats");
  }
  TopicStats stats;
  stats.delayed = Int(reply->element[1]);
  stats.ready = Int(reply->element[2]);
  stats.reserved = Int(reply->element[3]);
  stats.dead = Int(reply->element[4]);
  stats.done = Int(reply->element[5]);
  stats.waiting = Int(reply->element[6]);
  return stats;
}

absl::StatusOr<std::vector<std::string>> RedisBackend::Topics() {
  return SortedMembers(keys_.Topics());
}

absl::StatusOr<std::vector<std::string>> RedisBackend::SortedMembers(
    const std::string& key) {
  absl::StatusOr<std::vector<Reply>> replies =
      pool_.Pipeline({{"SMEMBERS", key}});
  if (!replies.ok()) return replies.status();
  const redisReply* r = (*replies)[0].get();
  if (r->type == REDIS_REPLY_ERROR) {
    return redis_internal::ErrorReplyStatus(Str(r));
  }
  std::vector<std::string> out;
  for (size_t i = 0; i < r->elements; ++i) out.push_back(Str(r->element[i]));
  std::sort(out.begin(), out.end());
  return out;
}

absl::Status RedisBackend::Replace(const NewJob& job, absl::Time now) {
  auto a = Timed<redis_internal::ReplaceArgs>(now);
  a.id = job.id;
  a.topic = job.topic;
  a.run_at = Micros(job.run_at);
  a.payload = job.payload;
  return RunForOk(ToCall(std::move(a)), job.id);
}

absl::Status RedisBackend::SetPaused(absl::string_view topic, bool paused,
                                     absl::Time now) {
  (void)now;
  auto a = Keyed<redis_internal::PauseArgs>();
  a.paused = keys_.Paused();
  a.topic = std::string(topic);
  a.pause = paused ? "1" : "0";
  return RunForOk(ToCall(std::move(a)), "");
}

absl::StatusOr<std::vector<std::string>> RedisBackend::PausedTopics() {
  return SortedMembers(keys_.Paused());
}

namespace {

std::string LimitSpec(const TopicLimit& limit) {
  return absl::StrCat(limit.rate, ":", DurationMicros(limit.period), ":",
                      limit.burst, ":", limit.concurrency);
}

}  // namespace

absl::Status RedisBackend::WriteLimit(std::string hash, absl::string_view topic,
                                      std::string spec) {
  auto a = Keyed<redis_internal::LimitArgs>();
  a.limits = std::move(hash);
  a.topic = std::string(topic);
  a.limit = std::move(spec);
  return RunForOk(ToCall(std::move(a)), "");
}

absl::Status RedisBackend::SetLimit(absl::string_view topic,
                                    const TopicLimit& limit, absl::Time now) {
  (void)now;
  return WriteLimit(keys_.Limits(), topic, LimitSpec(limit));
}

absl::Status RedisBackend::ClearLimit(absl::string_view topic, absl::Time now) {
  (void)now;
  return WriteLimit(keys_.Limits(), topic, "");
}

absl::Status RedisBackend::RecordAskedLimit(absl::string_view topic,
                                            const TopicLimit* limit) {
  return WriteLimit(keys_.LimitsAsked(), topic,
                    limit == nullptr ? "" : LimitSpec(*limit));
}

absl::StatusOr<std::vector<LimitedTopic>> RedisBackend::AskedLimits() {
  return ReadLimits(keys_.LimitsAsked());
}

absl::StatusOr<std::vector<LimitedTopic>> RedisBackend::Limits() {
  return ReadLimits(keys_.Limits());
}

absl::StatusOr<std::vector<LimitedTopic>> RedisBackend::ReadLimits(
    const std::string& hash) {
  absl::StatusOr<std::vector<Reply>> replies =
      pool_.Pipeline({{"HGETALL", hash}});
  if (!replies.ok()) return replies.status();
  const redisReply* r = (*replies)[0].get();
  if (r->type == REDIS_REPLY_ERROR) {
    return redis_internal::ErrorReplyStatus(Str(r));
  }
  std::vector<LimitedTopic> out;
  for (size_t i = 0; i + 1 < r->elements; i += 2) {
    LimitedTopic t;
    t.topic = Str(r->element[i]);
    const std::vector<std::string> f =
        absl::StrSplit(Str(r->element[i + 1]), ':');
    int64_t period_us = 0;
    if (f.size() != 5 || !absl::SimpleAtoi(f[0], &t.limit.rate) ||
        !absl::SimpleAtoi(f[1], &period_us) ||
        !absl::SimpleAtoi(f[2], &t.limit.burst) ||
        !absl::SimpleAtoi(f[3], &t.limit.concurrency)) {
      return Unexpected(r, "limits");
    }
    t.limit.period = absl::Microseconds(period_us);
    out.push_back(std::move(t));
  }
  std::sort(out.begin(), out.end(),
            [](const LimitedTopic& a, const LimitedTopic& b) {
              return a.topic < b.topic;
            });
  return out;
}

absl::StatusOr<int> RedisBackend::Kick(absl::string_view topic, int max,
                                       absl::Time now) {
  DQ_ASSIGN_OR_RETURN(std::vector<std::string> ids, KickIds(topic, max, now));
  return static_cast<int>(ids.size());
}

absl::StatusOr<std::vector<std::string>> RedisBackend::KickIds(
    absl::string_view topic, int max, absl::Time now) {
  std::vector<std::string> ids;
  if (max <= 0) return ids;
  auto a = Timed<redis_internal::KickArgs>(now);
  a.dead = keys_.Dead(topic);
  a.topic = std::string(topic);
  a.max = absl::StrCat(max);
  absl::StatusOr<Reply> r = RunOne(ToCall(std::move(a)));
  if (!r.ok()) return r.status();
  if (Word(r->get()) != redis_internal::kOk)
    return Unexpected(r->get(), "kick");
  for (size_t i = 1; i < (*r)->elements; ++i) {
    const redisReply* id = (*r)->element[i];
    if (id->type != REDIS_REPLY_STRING) return Unexpected(r->get(), "kick");
    ids.emplace_back(id->str, id->len);
  }
  return ids;
}

absl::Status RedisBackend::KickJob(absl::string_view id, absl::Time now) {
  auto a = Timed<redis_internal::KickJobArgs>(now);
  a.id = std::string(id);
  return RunForOk(ToCall(std::move(a)), id);
}

absl::Status RedisBackend::PromoteJob(absl::string_view id, absl::Time now) {
  auto a = Timed<redis_internal::PromoteJobArgs>(now);
  a.id = std::string(id);
  return RunForOk(ToCall(std::move(a)), id);
}

absl::StatusOr<int> RedisBackend::PurgeDead(absl::string_view topic, int max,
                                            absl::Time now,
                                            std::vector<Settled>* settled) {
  auto a = Timed<redis_internal::PurgeDeadArgs>(now);
  a.counts = counts_arg_;
  a.dead = keys_.Dead(topic);
  a.topic = std::string(topic);
  a.max = absl::StrCat(std::max(max, 1));
  DQ_ASSIGN_OR_RETURN(Reply r, Run(ToCall(std::move(a)), ""));
  if (Word(r.get()) != redis_internal::kOk || r->elements < 2) {
    return Unexpected(r.get(), "purge_dead");
  }
  DQ_RETURN_IF_ERROR(ParseSettledFrom(r.get(), 2, "purge_dead", settled));
  return static_cast<int>(Int(r->element[1]));
}

absl::StatusOr<PromoteResult> RedisBackend::PromoteDue(absl::Time now,
                                                       int limit) {
  auto a = Timed<redis_internal::PromoteDueArgs>(now);
  a.counts = counts_arg_;
  a.limit = absl::StrCat(std::max(limit, 1));
  absl::StatusOr<Reply> r = RunOne(ToCall(std::move(a)));
  if (!r.ok()) return r.status();
  const redisReply* reply = r->get();
  if (Word(reply) != redis_internal::kOk || reply->elements < 2) {
    return Unexpected(reply, "promote_due");
  }
  PromoteResult result;
  result.more = Int(reply->element[1]) != 0;
  for (size_t i = 2; i < reply->elements; ++i) {
    absl::StatusOr<Transition> t =
        ParseTransition(reply->element[i], "promote_due", &result.settled);
    if (!t.ok()) return t.status();
    result.transitions.push_back(*std::move(t));
  }
  return result;
}

absl::StatusOr<absl::Time> RedisBackend::NextDue() {
  absl::StatusOr<Reply> r =
      RunOne(ToCall(Keyed<redis_internal::NextDueArgs>()));
  if (!r.ok()) return r.status();
  if (Word(r->get()) != redis_internal::kOk)
    return Unexpected(r->get(), "next_due");
  if ((*r)->elements < 2) return absl::InfiniteFuture();
  return absl::FromUnixMicros(Int((*r)->element[1]));
}

absl::StatusOr<std::unique_ptr<NewsSubscription>> RedisBackend::Subscribe(
    NewsCallback on_news) {
  // The pool's options: with sentinels, the same locator, so that the
  // subscription follows the primary the pool finds.
  return redis_internal::SubscribeToNews(pool_.options(), news_channel_,
                                         std::move(on_news));
}

bool IsUnconfirmedWrite(const absl::Status& status) {
  return status.GetPayload(redis_internal::kUnconfirmedWritePayload)
      .has_value();
}

absl::StatusOr<std::unique_ptr<Backend>> OpenRedisBackend(
    const RedisOptions& options) {
  if (options.shards > 1) {
    absl::StatusOr<std::unique_ptr<ShardedRedisBackend>> sharded =
        ShardedRedisBackend::Open(options);
    if (!sharded.ok()) return sharded.status();
    return std::unique_ptr<Backend>(std::move(*sharded));
  }
  absl::StatusOr<std::unique_ptr<RedisBackend>> backend =
      RedisBackend::Open(options);
  if (!backend.ok()) return backend.status();
  return std::unique_ptr<Backend>(std::move(*backend));
}

}  // namespace delayq
