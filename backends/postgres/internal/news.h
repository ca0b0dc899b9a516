// Copyright delayq authors.
//
// news.h — how processes that share one PostgreSQL store tell each other of
// changes (Backend::Subscribe()), without querying the store in a loop.
//
// A write transaction with news ends, before its COMMIT and in the same
// round trip, with pg_notify(<schema>, message) statements, one a message,
// each of which decides in SQL whether there is news (see
// PostgresBackend::NewsScript()). PostgreSQL delivers them to every
// listener of the channel when, and only if, the transaction commits, so a
// subscriber that hears news and reads the store sees the change. A
// message is "r<topic>" (kReady), "d<µs>" (kDue) or "s<schedule name>"
// (kSchedules); a payload may also hold several, a line each.
//
// A subscription holds a connection of its own that LISTENs, and a thread
// that waits on its socket. When the connection drops (the server
// restarted, the network failed), the thread connects again, LISTENs again
// and delivers kResync, since news sent meanwhile is lost.

#ifndef DELAYQ_BACKENDS_POSTGRES_INTERNAL_NEWS_H_
#define DELAYQ_BACKENDS_POSTGRES_INTERNAL_NEWS_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "backends/postgres/internal/pool.h"
#include "delayq/backend.h"

namespace delayq {
namespace postgres_internal {

// Messages as they travel.
std::string ReadyMessage(absl::string_view topic);
std::string DueMessage(int64_t at_us);
// kSchedules; the name is for people reading the messages.
std::string SchedulesMessage(absl::string_view name);
// The news in one message, or nothing for one that is not news.
std::optional<StoreNews> ParseNewsMessage(absl::string_view message);

// Subscribe() of the PostgreSQL store: opens a connection of `pool`'s
// kind, LISTENs on `channel`, then calls `first` and delivers what it
// returns (if anything), then what arrives, to `on_news`, all from the
// subscription's thread. `pool` must outlive the subscription.
absl::StatusOr<std::unique_ptr<NewsSubscription>> SubscribeToNews(
    const Pool* pool, std::string channel, NewsCallback on_news,
    std::function<std::optional<StoreNews>()> first);

}  // namespace postgres_internal
}  // namespace delayq

#endif  // DELAYQ_BACKENDS_POSTGRES_INTERNAL_NEWS_H_
