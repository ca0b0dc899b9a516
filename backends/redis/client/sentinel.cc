// Copyright delayq authors.

#include "backends/redis/client/sentinel.h"

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
#include "backends/redis/client/connection.h"
#include "backends/redis/client/push_io.h"
#include "src/common/status_macros.h"

namespace delayq {
namespace redis_internal {
namespace {

absl::string_view Str(const redisReply* r) { return {r->str, r->len}; }

}  // namespace

PrimaryLocator::PrimaryLocator(std::vector<HostPort> sentinels,
                               std::string master, std::string password,
                               absl::Duration connect_timeout,
                               absl::Duration command_timeout,
                               std::shared_ptr<const TlsContext> tls)
    : sentinels_(std::move(sentinels)),
      master_(std::move(master)),
      password_(std::move(password)),
      connect_timeout_(connect_timeout),
      command_timeout_(command_timeout),
      tls_(std::move(tls)) {}

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

absl::StatusOr<HostPort> PrimaryLocator::Lookup() {
  std::vector<std::string> errors;
  for (const HostPort& sentinel : sentinels_) {
    absl::StatusOr<HostPort> found = Ask(sentinel);
    if (found.ok()) return found;
    errors.push_back(std::string(found.status().message()));
  }
  return absl::UnavailableError(absl::StrCat("redis: no sentinel named the ",
                                             Describe(), ": ",
                                             absl::StrJoin(errors, "; ")));
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
  absl::StatusOr<std::unique_ptr<Link>> link =
      io.Dial(SentinelTarget(sentinel), DialOptions());
  if (!link.ok()) return;
  Link& c = **link;
  const auto deadline = [&](absl::Duration d) {
    return Clock::now() + absl::ToChronoMicroseconds(d);
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
  if (!io.Send(c, request, deadline(command_timeout_)).ok()) return;
  bool pinged = false;
  for (;;) {
    absl::StatusOr<Reply> reply =
        io.Next(c, deadline(pinged ? command_timeout_ : absl::Seconds(15)));
    if (absl::IsDeadlineExceeded(reply.status()) && !pinged) {
      // Quiet for long: check that the sentinel is still there.
      std::string ping;
      AppendArrayHeader(1, &ping);
      AppendArgument("PING", &ping);
      if (!io.Send(c, ping, deadline(command_timeout_)).ok()) return;
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

Target PrimaryLocator::SentinelTarget(const HostPort& sentinel) {
  Target target;
  target.host = sentinel.host;
  target.port = sentinel.port;
  target.endpoint = HostPortText(sentinel);
  return target;
}

PoolOptions PrimaryLocator::DialOptions() const {
  PoolOptions dial;
  dial.connect_timeout = connect_timeout_;
  dial.tls = tls_;
  return dial;
}

absl::StatusOr<HostPort> PrimaryLocator::Ask(const HostPort& sentinel) const {
  const std::string where = absl::StrCat("sentinel ", HostPortText(sentinel));
  DQ_ASSIGN_OR_RETURN(std::unique_ptr<Link> link,
                      Dial(SentinelTarget(sentinel), DialOptions()));
  std::vector<Command> commands;
  if (!password_.empty()) commands.push_back({"AUTH", password_});
  commands.push_back({"SENTINEL", "get-master-addr-by-name", master_});
  DQ_ASSIGN_OR_RETURN(
      std::vector<Reply> replies,
      Exchange(*link, commands,
               Clock::now() + absl::ToChronoMicroseconds(command_timeout_)));
  for (const Reply& reply : replies) {
    if (reply->type == REDIS_REPLY_ERROR) {
      // Classified by the server's words (NOAUTH is PermissionDenied),
      // named by the sentinel that said them.
      const absl::Status refused = ErrorReplyStatus(Str(reply.get()));
      return absl::Status(refused.code(),
                          absl::StrCat(where, ": ", refused.message()));
    }
  }
  const redisReply* r = replies.back().get();
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
