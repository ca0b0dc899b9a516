// Copyright delayq authors.

#include "backends/redis/internal/sentinel.h"

#include <hiredis/hiredis.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "backends/redis/internal/connection.h"
#include "backends/redis/internal/push_io.h"

namespace delayq {
namespace redis_internal {
namespace {

struct ContextFree {
  void operator()(redisContext* c) const { redisFree(c); }
};
using Context = std::unique_ptr<redisContext, ContextFree>;

timeval Timeval(absl::Duration d) { return absl::ToTimeval(d); }

bool SameEndpoint(const HostPort& a, const HostPort& b) {
  return a.host == b.host && a.port == b.port;
}

absl::string_view Str(const redisReply* r) { return {r->str, r->len}; }

}  // namespace

std::string HostPortText(const HostPort& e) {
  if (e.host.find(':') != std::string::npos) {
    return absl::StrCat("[", e.host, "]:", e.port);
  }
  return absl::StrCat(e.host, ":", e.port);
}

PrimaryLocator::PrimaryLocator(std::vector<HostPort> sentinels,
                               std::string master, std::string password,
                               absl::Duration connect_timeout,
                               absl::Duration command_timeout)
    : sentinels_(std::move(sentinels)),
      master_(std::move(master)),
      password_(std::move(password)),
      connect_timeout_(connect_timeout),
      command_timeout_(command_timeout) {}

std::string PrimaryLocator::Describe() const {
  std::vector<std::string> names;
  for (const HostPort& s : sentinels_) names.push_back(HostPortText(s));
  return absl::StrCat("primary '", master_, "' (sentinels ",
                      absl::StrJoin(names, ","), ")");
}

PrimaryLocator::~PrimaryLocator() {
  if (watcher_.joinable()) {
    Wake(wake_fd_);
    watcher_.join();
  }
  if (wake_fd_ >= 0) close(wake_fd_);
}

absl::StatusOr<Found> PrimaryLocator::Primary() {
  {
    internal::MutexLock lock(&mu_);
    if (known_.has_value()) return Found{*known_, generation_};
  }
  // Asked without the lock: a sentinel may take its timeout to answer.
  std::vector<std::string> errors;
  for (const HostPort& sentinel : sentinels_) {
    absl::StatusOr<HostPort> found = Ask(sentinel);
    if (!found.ok()) {
      errors.push_back(std::string(found.status().message()));
      continue;
    }
    return Use(*found);
  }
  return absl::UnavailableError(absl::StrCat("redis: no sentinel named the ",
                                             Describe(), ": ",
                                             absl::StrJoin(errors, "; ")));
}

Found PrimaryLocator::Use(const HostPort& at) {
  internal::MutexLock lock(&mu_);
  if (!known_.has_value() || !SameEndpoint(*known_, at)) ++generation_;
  known_ = at;
  return Found{at, generation_};
}

absl::Status PrimaryLocator::StartWatching() {
  if (watcher_.joinable()) return absl::OkStatus();
  absl::StatusOr<int> fd = NewWakeFd();
  if (!fd.ok()) return fd.status();
  wake_fd_ = *fd;
  watcher_ = std::thread([this] { Watch(); });
  return absl::OkStatus();
}

void PrimaryLocator::Watch() {
  PushIo io(wake_fd_, Describe(), "sentinel watch closed");
  auto backoff = std::chrono::milliseconds(100);
  for (size_t next = 0;; ++next) {
    WatchOne(sentinels_[next % sentinels_.size()], io);
    // Ended: closing, or that sentinel is gone; try the next one.
    if (!io.Sleep(backoff)) return;
    backoff = std::min(2 * backoff, std::chrono::milliseconds(2000));
  }
}

void PrimaryLocator::WatchOne(const HostPort& sentinel, PushIo& io) {
  Target target{sentinel.host, sentinel.port, "", HostPortText(sentinel), 0};
  PoolOptions dial;
  dial.connect_timeout = connect_timeout_;
  absl::StatusOr<redisContext*> dialed = DialTarget(target, dial, wake_fd_);
  if (!dialed.ok()) return;
  Context c(*dialed);
  const auto deadline = [&](absl::Duration d) {
    return PushIo::Clock::now() + absl::ToChronoMicroseconds(d);
  };
  std::string request;
  if (!password_.empty()) {
    AppendArrayHeader(2, &request);
    AppendArgument("AUTH", &request);
    AppendArgument(password_, &request);
  }
  AppendArrayHeader(2, &request);
  AppendArgument("SUBSCRIBE", &request);
  AppendArgument("+switch-master", &request);
  if (!io.Send(c.get(), request, deadline(command_timeout_)).ok()) return;
  bool pinged = false;
  for (;;) {
    absl::StatusOr<Reply> reply = io.Next(
        c.get(), deadline(pinged ? command_timeout_ : absl::Seconds(15)));
    if (absl::IsDeadlineExceeded(reply.status()) && !pinged) {
      // Quiet for long: check that the sentinel is still there.
      std::string ping;
      AppendArrayHeader(1, &ping);
      AppendArgument("PING", &ping);
      if (!io.Send(c.get(), ping, deadline(command_timeout_)).ok()) return;
      pinged = true;
      continue;
    }
    if (!reply.ok() || (*reply)->type == REDIS_REPLY_ERROR) return;
    pinged = false;
    const redisReply* r = reply->get();
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 3 ||
        Str(r->element[0]) != "message" ||
        r->element[2]->type != REDIS_REPLY_STRING) {
      continue;  // the subscription's confirmation, a pong
    }
    // "<name> <old ip> <old port> <new ip> <new port>"
    const std::vector<absl::string_view> words =
        absl::StrSplit(Str(r->element[2]), ' ');
    HostPort to;
    if (words.size() == 5 && words[0] == master_ &&
        absl::SimpleAtoi(words[4], &to.port)) {
      to.host = std::string(words[3]);
      Use(to);
    }
  }
}

void PrimaryLocator::Forget(absl::string_view endpoint) {
  internal::MutexLock lock(&mu_);
  if (known_.has_value() && HostPortText(*known_) == endpoint) known_.reset();
}

uint64_t PrimaryLocator::generation() const {
  internal::MutexLock lock(&mu_);
  return generation_;
}

absl::StatusOr<HostPort> PrimaryLocator::Ask(const HostPort& sentinel) const {
  const std::string where = absl::StrCat("sentinel ", HostPortText(sentinel));
  Context c(redisConnectWithTimeout(sentinel.host.c_str(), sentinel.port,
                                    Timeval(connect_timeout_)));
  if (c == nullptr) return absl::ResourceExhaustedError("redis: out of memory");
  if (c->err != 0) return ContextStatus(c.get(), where, "connect");
  if (redisSetTimeout(c.get(), Timeval(command_timeout_)) != REDIS_OK) {
    return ContextStatus(c.get(), where, "set timeout");
  }
  auto command = [&](std::vector<std::string> args) -> absl::StatusOr<Reply> {
    std::vector<const char*> argv;
    std::vector<size_t> lens;
    for (const std::string& a : args) {
      argv.push_back(a.data());
      lens.push_back(a.size());
    }
    Reply reply(static_cast<redisReply*>(redisCommandArgv(
        c.get(), static_cast<int>(argv.size()), argv.data(), lens.data())));
    if (reply == nullptr) return ContextStatus(c.get(), where, args[0]);
    if (reply->type == REDIS_REPLY_ERROR) {
      return ErrorReplyStatus(absl::StrCat(where, ": ", Str(reply.get())));
    }
    return reply;
  };
  if (!password_.empty()) {
    absl::StatusOr<Reply> auth = command({"AUTH", password_});
    if (!auth.ok()) return auth.status();
  }
  absl::StatusOr<Reply> addr =
      command({"SENTINEL", "get-master-addr-by-name", master_});
  if (!addr.ok()) return addr.status();
  const redisReply* r = addr->get();
  if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
      r->element[0]->type != REDIS_REPLY_STRING ||
      r->element[1]->type != REDIS_REPLY_STRING) {
    return absl::NotFoundError(
        absl::StrCat(where, " knows no primary named '", master_, "'"));
  }
  HostPort found;
  found.host = std::string(Str(r->element[0]));
  if (!absl::SimpleAtoi(Str(r->element[1]), &found.port)) {
    return absl::InternalError(absl::StrCat(
        where, ": port '", Str(r->element[1]), "' is not a number"));
  }
  return found;
}

}  // namespace redis_internal
}  // namespace delayq
