// Copyright delayq authors.

#include "backends/redis/client/connection.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "backends/redis/client/cluster.h"
#include "src/common/status_macros.h"

namespace delayq {
namespace redis_internal {
namespace {

void AppendRequests(const std::vector<Command>& commands, std::string* out) {
  size_t size = 0;
  for (const Command& cmd : commands) {
    size += 16;
    for (const std::string& a : cmd) size += a.size() + 16;
  }
  out->reserve(size);
  for (const Command& cmd : commands) {
    AppendArrayHeader(cmd.size(), out);
    for (const std::string& a : cmd) AppendArgument(a, out);
  }
}

}  // namespace

std::string Endpoint(const PoolOptions& o) {
  if (o.locator != nullptr) return o.locator->Describe();
  if (!o.unix_socket.empty()) return o.unix_socket;
  return HostPortText(HostPort{o.host, o.port});
}

absl::StatusOr<Target> Resolve(const PoolOptions& options) {
  Target t;
  if (options.locator == nullptr) {
    t.host = options.host;
    t.port = options.port;
    t.unix_socket = options.unix_socket;
    t.endpoint = Endpoint(options);
    return t;
  }
  absl::StatusOr<Found> primary = options.locator->Find();
  if (!primary.ok()) return primary.status();
  t.host = primary->at.host;
  t.port = primary->at.port;
  t.endpoint = HostPortText(primary->at);
  t.generation = primary->generation;
  return t;
}

void ForgetPrimary(const PoolOptions& options, absl::string_view endpoint) {
  if (options.locator != nullptr) options.locator->Forget(endpoint);
}

bool FollowMoved(const PoolOptions& options,
                 const std::vector<Reply>& replies) {
  if (options.locator == nullptr) return false;
  bool moved = false;
  for (const Reply& r : replies) {
    std::optional<Redirect> redirect = ParseRedirect(r.get());
    if (redirect.has_value() && !redirect->ask) {
      options.locator->Use(redirect->to);
      moved = true;
    }
  }
  return moved;
}

absl::Status CheckPrimary(const redisReply* role, absl::string_view endpoint) {
  if (role->type == REDIS_REPLY_ARRAY && role->elements > 0 &&
      role->element[0]->type == REDIS_REPLY_STRING &&
      absl::string_view(role->element[0]->str, role->element[0]->len) ==
          "master") {
    return absl::OkStatus();
  }
  return absl::UnavailableError(absl::StrCat(
      "redis ", endpoint,
      ": not a primary (a failover is under way); the sentinels are asked "
      "again"));
}

Command AuthCommand(const PoolOptions& options) {
  if (options.password.empty()) return {};
  if (options.username.empty()) return {"AUTH", options.password};
  return {"AUTH", options.username, options.password};
}

absl::StatusOr<std::unique_ptr<Link>> Dial(const Target& target,
                                           const PoolOptions& options,
                                           int cancel_fd) {
  return Link::Dial(target, options.connect_timeout, options.tls.get(),
                    cancel_fd);
}

absl::StatusOr<std::vector<Reply>> Exchange(
    Link& link, const std::vector<Command>& commands,
    Clock::time_point deadline, int cancel_fd) {
  std::string request;
  AppendRequests(commands, &request);
  return ExchangeEncoded(link, request, commands.size(), deadline, cancel_fd);
}

absl::StatusOr<std::vector<Reply>> ExchangeEncoded(Link& link,
                                                   const std::string& request,
                                                   size_t count,
                                                   Clock::time_point deadline,
                                                   int cancel_fd) {
  DQ_RETURN_IF_ERROR(link.Write(request, deadline, cancel_fd));
  std::vector<Reply> replies;
  replies.reserve(count);
  while (replies.size() < count) {
    DQ_ASSIGN_OR_RETURN(Reply reply, link.Next(deadline, cancel_fd));
    replies.push_back(std::move(reply));
  }
  return replies;
}

std::vector<Command> Greeting(const PoolOptions& options, bool select) {
  std::vector<Command> greeting;
  if (Command auth = AuthCommand(options); !auth.empty()) {
    greeting.push_back(std::move(auth));
  }
  if (select && options.db != 0) {
    greeting.push_back({"SELECT", absl::StrCat(options.db)});
  }
  if (options.locator != nullptr && options.locator->ChecksRole()) {
    greeting.push_back({"ROLE"});
  }
  if (greeting.empty()) greeting.push_back({"PING"});
  return greeting;
}

absl::Status CheckGreeting(const std::vector<Command>& commands,
                           const std::vector<Reply>& replies,
                           absl::string_view endpoint) {
  for (size_t i = 0; i < commands.size(); ++i) {
    const redisReply* reply = replies[i].get();
    if (reply->type == REDIS_REPLY_ERROR) {
      return ErrorReplyStatus(absl::string_view(reply->str, reply->len));
    }
    if (commands[i][0] == "ROLE") {
      DQ_RETURN_IF_ERROR(CheckPrimary(reply, endpoint));
    }
  }
  return absl::OkStatus();
}

// RESP: "*<argc>\r\n" then "$<len>\r\n<arg>\r\n" per argument.
void AppendArrayHeader(size_t argc, std::string* out) {
  absl::StrAppend(out, "*", argc, "\r\n");
}

void AppendArgument(absl::string_view arg, std::string* out) {
  absl::StrAppend(out, "$", arg.size(), "\r\n", arg, "\r\n");
}

namespace {

// Whether the server answered a write with READONLY: it is a replica now.
bool AnyReadOnly(const std::vector<Reply>& replies) {
  for (const Reply& r : replies) {
    if (r->type == REDIS_REPLY_ERROR &&
        absl::StartsWith(absl::string_view(r->str, r->len), "READONLY")) {
      return true;
    }
  }
  return false;
}

// "CLOCK_SKEW <caller minus server, µs> ..." from scripts/lib/clock.lua.
absl::Status ClockSkewStatus(absl::string_view message) {
  int64_t skew_us = 0;
  const std::vector<absl::string_view> words = absl::StrSplit(message, ' ');
  if (words.size() < 2 || !absl::SimpleAtoi(words[1], &skew_us)) {
    return absl::InternalError(absl::StrCat("redis: ", message));
  }
  const absl::Duration skew = absl::Microseconds(skew_us);
  return absl::FailedPreconditionError(absl::StrCat(
      "redis: this host's clock is ",
      absl::FormatDuration(absl::AbsDuration(skew)),
      skew > absl::ZeroDuration() ? " ahead of" : " behind",
      " the server's, more than max_clock_skew allows; nothing was changed. "
      "Fix the host's time synchronisation, or let the server keep time "
      "(time=server)"));
}

}  // namespace

absl::Status ErrorReplyStatus(absl::string_view message) {
  const std::string text = absl::StrCat("redis: ", message);
  auto starts = [&](absl::string_view p) {
    return absl::StartsWith(message, p);
  };
  if (starts("OOM")) return absl::ResourceExhaustedError(text);
  if (starts("CLOCK_SKEW ")) return ClockSkewStatus(message);
  // MOVED and ASK reach a caller only when a slot kept moving.
  if (starts("LOADING") || starts("BUSY") || starts("READONLY") ||
      starts("MASTERDOWN") || starts("TRYAGAIN") || starts("CLUSTERDOWN") ||
      starts("MOVED ") || starts("ASK ") ||
      starts("ERR max number of clients")) {
    return absl::UnavailableError(text);
  }
  if (starts("NOAUTH") || starts("WRONGPASS") || starts("NOPERM") ||
      starts("ERR AUTH")) {
    return absl::PermissionDeniedError(text);
  }
  // SELECT of a database the server does not have: a configuration error.
  if (starts("ERR DB index")) return absl::InvalidArgumentError(text);
  return absl::InternalError(text);
}

ConnectionPool::ConnectionPool(PoolOptions options)
    : options_(std::move(options)),
      endpoint_(Endpoint(options_)),
      slots_(static_cast<size_t>(options_.size)),
      slot_generation_(static_cast<size_t>(options_.size), 0),
      connecting_(static_cast<size_t>(options_.size), false) {}

bool ConnectionPool::Current(size_t slot) const {
  const std::shared_ptr<SharedConnection>& c = slots_[slot];
  if (c == nullptr || !c->usable()) return false;
  return options_.locator == nullptr ||
         slot_generation_[slot] == options_.locator->generation();
}

ConnectionPool::~ConnectionPool() = default;

absl::StatusOr<ConnectionPool::Opened> ConnectionPool::Connect() {
  absl::StatusOr<Target> target = Resolve(options_);
  if (!target.ok()) return target.status();
  absl::StatusOr<std::unique_ptr<Link>> link = ConnectTo(*target);
  if (!link.ok()) {
    ForgetPrimary(options_, target->endpoint);
    return link.status();
  }
  return Opened{*std::move(link), target->generation};
}

absl::StatusOr<std::unique_ptr<Link>> ConnectionPool::ConnectTo(
    const Target& target) {
  DQ_ASSIGN_OR_RETURN(std::unique_ptr<Link> link, Dial(target, options_));
  const std::vector<Command> greeting = Greeting(options_, /*select=*/true);
  DQ_ASSIGN_OR_RETURN(std::vector<Reply> replies,
                      Exchange(*link, greeting,
                               Clock::now() + absl::ToChronoMicroseconds(
                                                  options_.command_timeout)));
  DQ_RETURN_IF_ERROR(CheckGreeting(greeting, replies, target.endpoint));
  // More than the greeting's replies: the connection's first call would
  // take the rest for its own.
  DQ_RETURN_IF_ERROR(link->CheckIdle());
  return link;
}

ConnectionPool::Choice ConnectionPool::Choose() {
  Choice choice;
  for (size_t i = 0; i < slots_.size(); ++i) {
    const std::shared_ptr<SharedConnection>& c = slots_[i];
    // A connection nobody uses would not have noticed a server that went
    // away (and maybe came back) since; it is checked before it is used.
    if (Current(i) && c->in_flight() == 0 && c->StillOpen()) {
      choice.use = c;
      return choice;
    }
    if (!Current(i) && choice.open < 0 && !connecting_[i]) {
      choice.open = static_cast<int>(i);
    }
  }
  if (choice.open < 0) choice.use = LeastBusy();
  return choice;
}

std::shared_ptr<SharedConnection> ConnectionPool::LeastBusy() {
  std::shared_ptr<SharedConnection> least;
  for (size_t i = 0; i < slots_.size(); ++i) {
    const std::shared_ptr<SharedConnection>& c = slots_[i];
    if (!Current(i)) continue;
    if (least == nullptr || c->in_flight() < least->in_flight()) least = c;
  }
  if (least != nullptr && least->in_flight() == 0 && !least->StillOpen()) {
    return nullptr;
  }
  return least;
}

absl::StatusOr<std::shared_ptr<SharedConnection>> ConnectionPool::Pick() {
  size_t slot = 0;
  {
    internal::MutexLock lock(&mu_);
    const uint64_t before = openings_;
    Choice choice = Choose();
    // No connection open, and other calls are opening one in every slot:
    // wait for theirs rather than open more, and share its failure.
    while (choice.use == nullptr && choice.open < 0) {
      if (openings_ != before && !last_opening_.ok()) return last_opening_;
      opened_.WaitUntil(&mu_, absl::Now() + options_.connect_timeout +
                                  options_.command_timeout);
      choice = Choose();
    }
    if (choice.use != nullptr) {
      choice.use->AddUser();
      return std::move(choice.use);
    }
    slot = static_cast<size_t>(choice.open);
    connecting_[slot] = true;
  }
  // Connecting may take the connect timeout: not under the lock, so calls
  // on the other connections go on meanwhile.
  absl::StatusOr<Opened> context = Connect();
  std::shared_ptr<SharedConnection> fresh;
  if (context.ok()) {
    fresh = std::make_shared<SharedConnection>(std::move(context->link),
                                               options_.command_timeout);
  }
  internal::MutexLock lock(&mu_);
  connecting_[slot] = false;
  ++openings_;
  last_opening_ = context.status();
  opened_.SignalAll();
  if (fresh == nullptr) fresh = LeastBusy();
  if (fresh == nullptr) return context.status();
  if (context.ok()) {
    slots_[slot] = fresh;
    slot_generation_[slot] = context->generation;
  }
  fresh->AddUser();
  return fresh;
}

absl::StatusOr<std::vector<Reply>> ConnectionPool::Pipeline(
    const std::vector<Command>& commands) {
  std::string out;
  AppendRequests(commands, &out);
  return PipelineEncoded(out, commands.size());
}

absl::StatusOr<std::vector<Reply>> ConnectionPool::PipelineEncoded(
    const std::string& request, size_t count) {
  absl::StatusOr<std::shared_ptr<SharedConnection>> c = Pick();
  if (!c.ok()) return c.status();
  absl::StatusOr<std::vector<Reply>> replies = (*c)->Call(request, count);
  // A primary demoted to a replica (a failover) answers every write with
  // READONLY for as long as the connection lives; the address may lead to
  // the new primary on a new connection.
  if (replies.ok() && AnyReadOnly(*replies)) {
    (*c)->Fail(absl::UnavailableError(
        absl::StrCat("redis ", (*c)->endpoint(),
                     ": the server is a read-only replica now")));
    ForgetPrimary(options_, (*c)->endpoint());
  }
  // A cluster's slot moved: the next calls go to its new node, and the
  // connections to this one are retired.
  if (replies.ok()) FollowMoved(options_, *replies);
  (*c)->RemoveUser();
  return replies;
}

absl::StatusOr<std::vector<Reply>> ConnectionPool::PipelineAt(
    const HostPort& at, const std::string& request, size_t count) {
  Target target;
  target.host = at.host;
  target.port = at.port;
  target.endpoint = HostPortText(at);
  DQ_ASSIGN_OR_RETURN(std::unique_ptr<Link> link, ConnectTo(target));
  return ExchangeEncoded(
      *link, request, count,
      Clock::now() + absl::ToChronoMicroseconds(options_.command_timeout));
}

absl::Status Scripts::LoadAll(absl::Span<const ScriptSource> sources) {
  std::vector<Command> loads;
  for (const ScriptSource& s : sources) {
    const bool writes =
        absl::string_view(s.body).find("\n-- Writes: nothing\n") ==
        absl::string_view::npos;
    scripts_[s.name] =
        Script{s.body, "", s.num_keys, s.num_args, s.more_args, writes};
    loads.push_back({"SCRIPT", "LOAD", s.body});
  }
  absl::StatusOr<std::vector<Reply>> replies = pool_->Pipeline(loads);
  if (!replies.ok()) return replies.status();
  for (size_t i = 0; i < sources.size(); ++i) {
    const redisReply* r = (*replies)[i].get();
    if (r->type == REDIS_REPLY_ERROR) {
      return ErrorReplyStatus(absl::string_view(r->str, r->len));
    }
    if (r->type != REDIS_REPLY_STRING) {
      return absl::InternalError("redis: SCRIPT LOAD returned no sha");
    }
    scripts_[sources[i].name].sha.assign(r->str, r->len);
  }
  return absl::OkStatus();
}

void Scripts::Append(const Script& s, const Call& call, bool by_body,
                     std::string* out) {
  size_t size = 64 + (by_body ? s.body.size() : s.sha.size());
  for (const std::string& k : call.keys) size += k.size() + 16;
  for (const std::string& a : call.args) size += a.size() + 16;
  size += call.encoded_args.size();
  // One call is the common case; several grow the string geometrically.
  if (out->empty()) out->reserve(size);
  AppendArrayHeader(
      3 + call.keys.size() + call.args.size() + call.encoded_count, out);
  AppendArgument(by_body ? "EVAL" : "EVALSHA", out);
  AppendArgument(by_body ? s.body : s.sha, out);
  AppendArgument(absl::StrCat(call.keys.size()), out);
  for (const std::string& k : call.keys) AppendArgument(k, out);
  for (const std::string& a : call.args) AppendArgument(a, out);
  out->append(call.encoded_args);
}

absl::Status Scripts::CheckCall(const ScriptSource& declared,
                                const Call& call) {
  const size_t args = call.args.size() + call.encoded_count;
  const size_t want = static_cast<size_t>(declared.num_args);
  if (call.keys.size() == static_cast<size_t>(declared.num_keys) &&
      (declared.more_args ? args >= want : args == want)) {
    return absl::OkStatus();
  }
  return absl::InternalError(absl::StrCat(
      "redis: script '", call.script, "' declares ", declared.num_keys,
      " keys and ", declared.more_args ? "at least " : "", declared.num_args,
      " arguments; the call passed ", call.keys.size(), " and ", args));
}

absl::StatusOr<std::vector<Reply>> Scripts::Run(
    const std::vector<Call>& calls) {
  std::vector<const Script*> scripts;
  scripts.reserve(calls.size());
  for (const Call& call : calls) {
    auto it = scripts_.find(call.script);
    // Every name the backend calls is embedded; an unknown one is a bug.
    if (it == scripts_.end()) {
      return absl::InternalError(
          absl::StrCat("redis: no script named '", call.script, "'"));
    }
    const Script& s = it->second;
    DQ_RETURN_IF_ERROR(CheckCall(
        ScriptSource{nullptr, s.num_keys, s.num_args, s.more_args, nullptr},
        call));
    scripts.push_back(&it->second);
  }
  std::string request;
  bool writes = false;
  for (size_t i = 0; i < calls.size(); ++i) {
    Append(*scripts[i], calls[i], false, &request);
    writes = writes || scripts[i]->writes;
  }
  const bool wait = writes && wait_.replicas > 0;
  absl::StatusOr<std::vector<Reply>> replies =
      Send(request, calls.size(), wait);
  if (!replies.ok()) return replies;
  DQ_RETURN_IF_ERROR(Redo(scripts, calls, wait, &*replies));
  return replies;
}

namespace {

// Why a call's reply says it did not run and may be sent again.
enum class Again { kNo, kNoScript, kMoved, kAsk };

Again AgainFor(const redisReply* r, HostPort* ask_at) {
  if (r->type != REDIS_REPLY_ERROR) return Again::kNo;
  if (absl::StartsWith(absl::string_view(r->str, r->len), "NOSCRIPT")) {
    return Again::kNoScript;
  }
  std::optional<Redirect> redirect = ParseRedirect(r);
  if (!redirect.has_value()) return Again::kNo;
  if (!redirect->ask) return Again::kMoved;
  *ask_at = redirect->to;
  return Again::kAsk;
}

}  // namespace

absl::Status Scripts::Redo(const std::vector<const Script*>& scripts,
                           const std::vector<Call>& calls, bool wait,
                           std::vector<Reply>* replies) {
  constexpr int kRounds = 5;
  for (int round = 0; round < kRounds; ++round) {
    // The calls to send again on the pool's server, and per ASK target.
    std::vector<size_t> here;
    std::vector<std::pair<HostPort, std::vector<size_t>>> asked;
    for (size_t i = 0; i < replies->size(); ++i) {
      HostPort at;
      switch (AgainFor((*replies)[i].get(), &at)) {
        case Again::kNo:
          break;
        case Again::kNoScript:
        case Again::kMoved:
          here.push_back(i);
          break;
        case Again::kAsk: {
          auto it = std::find_if(asked.begin(), asked.end(), [&](auto& a) {
            return a.first.host == at.host && a.first.port == at.port;
          });
          if (it == asked.end()) it = asked.insert(asked.end(), {at, {}});
          it->second.push_back(i);
          break;
        }
      }
    }
    if (here.empty() && asked.empty()) return absl::OkStatus();
    if (!here.empty()) {
      std::string again;
      for (size_t i : here) Append(*scripts[i], calls[i], true, &again);
      DQ_ASSIGN_OR_RETURN(std::vector<Reply> redone,
                          Send(again, here.size(), wait));
      for (size_t k = 0; k < here.size(); ++k) {
        (*replies)[here[k]] = std::move(redone[k]);
      }
    }
    for (const auto& [at, indexes] : asked) {
      std::string again;
      for (size_t i : indexes) {
        AppendArrayHeader(1, &again);
        AppendArgument("ASKING", &again);
        Append(*scripts[i], calls[i], true, &again);
      }
      DQ_ASSIGN_OR_RETURN(std::vector<Reply> redone,
                          Send(again, indexes.size(), wait, &at));
      for (size_t k = 0; k < indexes.size(); ++k) {
        (*replies)[indexes[k]] = std::move(redone[k]);
      }
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Reply>> Scripts::Send(const std::string& request,
                                                 size_t count, bool wait,
                                                 const HostPort* ask_at) {
  std::string with_wait;
  if (wait) {
    with_wait = request;
    AppendArrayHeader(3, &with_wait);
    AppendArgument("WAIT", &with_wait);
    AppendArgument(absl::StrCat(wait_.replicas), &with_wait);
    AppendArgument(absl::StrCat(absl::ToInt64Milliseconds(wait_.timeout)),
                   &with_wait);
  }
  const std::string& sent = wait ? with_wait : request;
  // After ASKING, each call has two replies: ASKING's OK, then its own.
  const size_t per_call = ask_at != nullptr ? 2 : 1;
  const size_t total = count * per_call + (wait ? 1 : 0);
  absl::StatusOr<std::vector<Reply>> replies =
      ask_at != nullptr ? pool_->PipelineAt(*ask_at, sent, total)
                        : pool_->PipelineEncoded(sent, total);
  if (!replies.ok()) return replies;
  if (wait) {
    const Reply waited = std::move(replies->back());
    replies->pop_back();
    if (waited->type == REDIS_REPLY_ERROR) {
      return ErrorReplyStatus(absl::string_view(waited->str, waited->len));
    }
    const int64_t confirmed =
        waited->type == REDIS_REPLY_INTEGER ? waited->integer : 0;
    if (confirmed < wait_.replicas) {
      return UnconfirmedWriteError(confirmed, wait_.replicas, wait_.timeout);
    }
  }
  if (per_call == 1) return replies;
  std::vector<Reply> own;
  own.reserve(count);
  for (size_t i = 1; i < replies->size(); i += 2) {
    own.push_back(std::move((*replies)[i]));
  }
  return own;
}

absl::Status UnconfirmedWriteError(int64_t confirmed, int wanted,
                                   absl::Duration timeout) {
  absl::Status s = absl::UnavailableError(absl::StrCat(
      "redis: the change was made on the primary, but ", confirmed, " of ",
      wanted, " replicas confirmed it within ", absl::FormatDuration(timeout),
      "; it may be lost in a failover"));
  s.SetPayload(kUnconfirmedWritePayload, absl::Cord("1"));
  return s;
}

absl::StatusOr<Reply> Scripts::RunOne(Call call) {
  std::vector<Call> calls;
  calls.push_back(std::move(call));
  absl::StatusOr<std::vector<Reply>> replies = Run(calls);
  if (!replies.ok()) return replies.status();
  Reply reply = std::move((*replies)[0]);
  if (reply->type == REDIS_REPLY_ERROR) {
    return ErrorReplyStatus(absl::string_view(reply->str, reply->len));
  }
  return reply;
}

}  // namespace redis_internal
}  // namespace delayq
