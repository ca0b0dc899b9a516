// Copyright delayq authors.

#include "backends/redis/internal/news.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <thread>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "backends/redis/client/push_io.h"
#include "src/common/status_macros.h"

namespace delayq {
namespace redis_internal {
namespace {

// Reconnection backoff: the first retry comes quickly (a server that
// dropped subscribers, a failover), later ones ever slower.
constexpr auto kFirstBackoff = std::chrono::milliseconds(5);
constexpr auto kLongestBackoff = std::chrono::seconds(1);
// A connection that brought nothing for this long is asked for a PING, and
// replaced when the answer does not come within the command timeout: a
// server that vanished without closing the connection (a host that went
// down, a network cut) would otherwise leave the subscription deaf.
constexpr auto kIdleCheck = std::chrono::seconds(15);
// With sentinels, how often an idle subscription checks (locally) whether
// the pool found a new primary, where news is published from then on.
constexpr auto kPrimaryCheck = std::chrono::milliseconds(200);

std::string Str(const redisReply* r) {
  if (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS ||
      r->type == REDIS_REPLY_ERROR) {
    return std::string(r->str, r->len);
  }
  return "";
}

// A pushed message's kind ("smessage", "ssubscribe", ...), or "".
std::string PushKind(const redisReply* r) {
  if (r->type != REDIS_REPLY_ARRAY || r->elements < 1) return "";
  return absl::AsciiStrToLower(Str(r->element[0]));
}

class NewsListener final : public NewsSubscription {
 public:
  NewsListener(const PoolOptions& options, std::string channel,
               NewsCallback on_news, int wake_fd)
      : options_(options),
        endpoint_(Endpoint(options)),
        channel_(std::move(channel)),
        on_news_(std::move(on_news)),
        wake_fd_(wake_fd),
        io_(wake_fd, endpoint_, "news subscription closed") {}

  ~NewsListener() override {
    if (thread_.joinable()) {
      // Every wait of the thread polls wake_fd_ too, so it returns at once
      // and delivers nothing more.
      Wake(wake_fd_);
      thread_.join();
    }
    close(wake_fd_);
  }

  // Connects and subscribes in the caller's thread, then starts the reader.
  absl::Status Start() {
    absl::StatusOr<std::unique_ptr<Link>> link = Open();
    if (!link.ok()) return link.status();
    link_ = *std::move(link);
    thread_ = std::thread([this] { Run(); });
    return absl::OkStatus();
  }

 private:
  // A connection with AUTH (when a password is set) and SSUBSCRIBE done;
  // with sentinels, to the primary they name now, checked with ROLE.
  absl::StatusOr<std::unique_ptr<Link>> Open() {
    absl::StatusOr<Target> target = Resolve(options_);
    if (!target.ok()) return target.status();
    absl::StatusOr<std::unique_ptr<Link>> link = io_.Dial(*target, options_);
    absl::Status status = link.status();
    if (status.ok()) status = Handshake(**link);
    if (!status.ok()) {
      if (!absl::IsCancelled(status)) ForgetPrimary(options_, target->endpoint);
      return status;
    }
    opened_generation_ = target->generation;
    return link;
  }

  // The greeting (no SELECT: a subscription is not in a database), then
  // SSUBSCRIBE, whose confirmation is the reply after the greeting's.
  absl::Status Handshake(Link& link) {
    const Clock::time_point deadline =
        Clock::now() + absl::ToChronoMicroseconds(options_.command_timeout);
    std::vector<Command> commands = Greeting(options_, /*select=*/false);
    commands.push_back({"SSUBSCRIBE", channel_});
    DQ_ASSIGN_OR_RETURN(std::vector<Reply> replies,
                        io_.Exchange(link, commands, deadline));
    // On a cluster whose slot moved, the next attempt goes to its node.
    FollowMoved(options_, replies);
    const Reply confirm = std::move(replies.back());
    commands.pop_back();
    replies.pop_back();
    DQ_RETURN_IF_ERROR(CheckGreeting(commands, replies, endpoint_));
    const redisReply* r = confirm.get();
    if (r->type == REDIS_REPLY_ERROR) return ErrorReplyStatus(Str(r));
    if (PushKind(r) != "ssubscribe") {
      return absl::InternalError(absl::StrCat(
          "redis ", endpoint_, ": unexpected reply to SSUBSCRIBE"));
    }
    return absl::OkStatus();
  }

  void Deliver(const StoreNews& news) {
    // A callback must not throw; should one, the news is dropped rather
    // than the process.
    try {
      on_news_(news);
    } catch (...) {
    }
  }

  void Run() {
    Clock::duration backoff = kFirstBackoff;
    bool pinged = false;
    for (;;) {
      if (link_ == nullptr) {
        if (!io_.Sleep(backoff)) return;
        backoff = std::min<Clock::duration>(2 * backoff, kLongestBackoff);
        absl::StatusOr<std::unique_ptr<Link>> link = Open();
        if (absl::IsCancelled(link.status())) return;
        if (!link.ok()) continue;
        link_ = *std::move(link);
        backoff = kFirstBackoff;
        pinged = false;
        StoreNews resync;
        resync.kind = StoreNews::Kind::kResync;
        Deliver(resync);
      }
      const Clock::time_point silent_until =
          Clock::now() +
          (pinged ? absl::ToChronoMicroseconds(options_.command_timeout)
                  : Clock::duration(kIdleCheck));
      absl::StatusOr<Reply> reply = NextOrNewPrimary(silent_until);
      if (absl::IsCancelled(reply.status())) return;
      if (absl::IsAborted(reply.status())) {
        // The pool found a new primary: news is published there now.
        Drop();
        continue;
      }
      if (absl::IsDeadlineExceeded(reply.status()) && !pinged) {
        std::string ping;
        AppendArrayHeader(1, &ping);
        AppendArgument("PING", &ping);
        pinged = true;
        const absl::Status sent =
            io_.Send(*link_, ping,
                     Clock::now() +
                         absl::ToChronoMicroseconds(options_.command_timeout));
        if (absl::IsCancelled(sent)) return;
        if (sent.ok()) continue;
      }
      if (!reply.ok()) {
        Drop();
        continue;
      }
      pinged = false;
      const redisReply* r = reply->get();
      const std::string kind = PushKind(r);
      if (kind == "smessage" && r->elements == 3 &&
          r->element[2]->type == REDIS_REPLY_STRING) {
        std::optional<StoreNews> news = ParseNews(
            absl::string_view(r->element[2]->str, r->element[2]->len));
        if (news.has_value()) Deliver(*news);
      } else if (kind == "sunsubscribe") {
        // The server ended the subscription (on a cluster, the slot moved
        // to another node): subscribe again, wherever the channel is now.
        Drop();
      }
      // Anything else (the answer to a PING) only shows the connection is
      // alive.
    }
  }

  void Drop() { link_.reset(); }

  // Next() until `deadline`; with sentinels, Aborted as soon as the primary
  // has changed (checked every kPrimaryCheck, without asking anyone).
  absl::StatusOr<Reply> NextOrNewPrimary(Clock::time_point deadline) {
    if (options_.locator == nullptr) return io_.Next(*link_, deadline);
    for (;;) {
      const Clock::time_point step =
          std::min(deadline, Clock::now() + Clock::duration(kPrimaryCheck));
      absl::StatusOr<Reply> reply = io_.Next(*link_, step);
      if (!absl::IsDeadlineExceeded(reply.status()) || step == deadline) {
        return reply;
      }
      if (OnOldPrimary()) return absl::AbortedError("new primary");
    }
  }

  // With sentinels: whether the primary has changed since this connection
  // was opened.
  bool OnOldPrimary() const {
    return options_.locator != nullptr &&
           options_.locator->generation() != opened_generation_;
  }

  const PoolOptions options_;
  const std::string endpoint_;
  const std::string channel_;
  const NewsCallback on_news_;
  const int wake_fd_;  // an eventfd, written once to stop the thread
  PushIo io_;
  // The subscribed connection, or null between a failure and the next
  // opening. Used by the thread only once it runs.
  std::unique_ptr<Link> link_;
  // The locator's generation when link_ was opened.
  uint64_t opened_generation_ = 0;
  std::thread thread_;
};

}  // namespace

std::optional<StoreNews> ParseNews(absl::string_view message) {
  if (message.size() < 2) return std::nullopt;
  StoreNews news;
  const absl::string_view rest = message.substr(1);
  switch (message[0]) {
    case 'r':
      news.kind = StoreNews::Kind::kReady;
      news.topic = std::string(rest);
      return news;
    case 'd': {
      int64_t micros = 0;
      // Digits with an optional '-': SimpleAtoi alone would take spaces
      // and a '+' too.
      const bool digits =
          (rest[0] == '-' ||
           absl::ascii_isdigit(static_cast<unsigned char>(rest[0]))) &&
          absl::ascii_isdigit(static_cast<unsigned char>(rest.back()));
      if (!digits || !absl::SimpleAtoi(rest, &micros)) {
        return std::nullopt;
      }
      news.kind = StoreNews::Kind::kDue;
      news.at = absl::FromUnixMicros(micros);
      return news;
    }
    case 's':
      news.kind = StoreNews::Kind::kSchedules;
      return news;
    default:
      return std::nullopt;
  }
}

absl::StatusOr<std::unique_ptr<NewsSubscription>> SubscribeToNews(
    const PoolOptions& options, std::string channel, NewsCallback on_news) {
  DQ_ASSIGN_OR_RETURN(const int wake_fd, NewWakeFd());
  auto listener = std::make_unique<NewsListener>(options, std::move(channel),
                                                 std::move(on_news), wake_fd);
  if (absl::Status s = listener->Start(); !s.ok()) return s;
  return std::unique_ptr<NewsSubscription>(std::move(listener));
}

}  // namespace redis_internal
}  // namespace delayq
