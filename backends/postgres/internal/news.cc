// Copyright delayq authors.

#include "backends/postgres/internal/news.h"

#include <errno.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <thread>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "backends/postgres/internal/connection.h"
#include "src/common/status_macros.h"

namespace delayq {
namespace postgres_internal {
namespace {

// How long a subscriber waits between attempts to connect again.
constexpr absl::Duration kFirstRetry = absl::Milliseconds(50);
constexpr absl::Duration kLastRetry = absl::Seconds(2);

class Subscription : public NewsSubscription {
 public:
  Subscription(const Pool* pool, std::string channel, NewsCallback on_news)
      : pool_(pool),
        channel_(std::move(channel)),
        on_news_(std::move(on_news)) {}

  ~Subscription() override {
    if (thread_.joinable()) {
      const uint64_t one = 1;
      (void)!write(stop_, &one, sizeof(one));
      thread_.join();
    }
    if (stop_ >= 0) close(stop_);
  }

  absl::Status Open(const std::function<std::optional<StoreNews>()>& first) {
    stop_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (stop_ < 0) {
      return absl::InternalError(absl::StrCat("eventfd: ", strerror(errno)));
    }
    DQ_RETURN_IF_ERROR(Listen());
    // Read after LISTEN, so that a horizon announced meanwhile arrives as
    // news if it is not the one read here.
    std::optional<StoreNews> initial = first();
    thread_ = std::thread([this, initial] {
      if (initial.has_value()) on_news_(*initial);
      Run();
    });
    return absl::OkStatus();
  }

 private:
  absl::Status Listen() {
    DQ_ASSIGN_OR_RETURN(conn_, pool_->Connect());
    return conn_->Run(absl::StrCat("LISTEN \"", channel_, "\""));
  }

  void Run() {
    const int quiet_ms =
        static_cast<int>(absl::ToInt64Milliseconds(pool_->answer_timeout()));
    for (;;) {
      pollfd fds[2] = {{stop_, POLLIN, 0}, {PQsocket(conn_->raw()), POLLIN, 0}};
      const int ready = poll(fds, 2, quiet_ms);
      if (ready < 0 && errno != EINTR) return;
      if (fds[0].revents != 0) return;
      if (ready < 0 || (ready > 0 && fds[1].revents == 0)) continue;
      if (!Alive(ready == 0)) {
        if (!Reconnect()) return;
        StoreNews resync;
        resync.kind = StoreNews::Kind::kResync;
        on_news_(resync);
        continue;
      }
      while (PGnotify* n = PQnotifies(conn_->raw())) {
        Deliver(n->extra);
        PQfreemem(n);
      }
    }
  }

  // Whether the connection still works: after a quiet spell (`quiet`)
  // the server must answer a statement within the answer timeout, since
  // a frozen server or a network that drops packets silently looks just
  // like a quiet one; otherwise what arrived must read.
  bool Alive(bool quiet) {
    if (quiet) return conn_->Run("SELECT 1").ok();
    return PQconsumeInput(conn_->raw()) != 0 && !conn_->Broken();
  }

  void Deliver(absl::string_view payload) {
    for (absl::string_view line : absl::StrSplit(payload, '\n')) {
      std::optional<StoreNews> news = ParseNewsMessage(line);
      if (news.has_value()) on_news_(*news);
    }
  }

  // Connects and LISTENs again, waiting longer after each failure; false
  // when the subscription is being destroyed.
  bool Reconnect() {
    conn_.reset();
    absl::Duration wait = kFirstRetry;
    for (;;) {
      if (Listen().ok()) return true;
      conn_.reset();
      pollfd stop = {stop_, POLLIN, 0};
      if (poll(&stop, 1, static_cast<int>(absl::ToInt64Milliseconds(wait))) >
          0) {
        return false;
      }
      wait = std::min(wait * 2, kLastRetry);
    }
  }

  const Pool* const pool_;
  const std::string channel_;
  const NewsCallback on_news_;
  std::unique_ptr<Connection> conn_;
  int stop_ = -1;
  std::thread thread_;
};

}  // namespace

std::string ReadyMessage(absl::string_view topic) {
  return absl::StrCat("r", topic);
}

std::string DueMessage(int64_t at_us) { return absl::StrCat("d", at_us); }

std::string SchedulesMessage(absl::string_view name) {
  return absl::StrCat("s", name);
}

std::optional<StoreNews> ParseNewsMessage(absl::string_view message) {
  if (message.empty()) return std::nullopt;
  StoreNews news;
  const absl::string_view rest = message.substr(1);
  switch (message[0]) {
    case 'r':
      news.kind = StoreNews::Kind::kReady;
      news.topic = std::string(rest);
      return news;
    case 'd': {
      int64_t us = 0;
      if (!absl::SimpleAtoi(rest, &us)) return std::nullopt;
      news.kind = StoreNews::Kind::kDue;
      news.at = FromMicros(us);
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
    const Pool* pool, std::string channel, NewsCallback on_news,
    std::function<std::optional<StoreNews>()> first) {
  auto subscription = std::make_unique<Subscription>(pool, std::move(channel),
                                                     std::move(on_news));
  DQ_RETURN_IF_ERROR(subscription->Open(first));
  return std::unique_ptr<NewsSubscription>(std::move(subscription));
}

}  // namespace postgres_internal
}  // namespace delayq
