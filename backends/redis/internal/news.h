// Copyright delayq authors.
//
// news.h — the Redis backend's news subscription (Backend::Subscribe()).
// Private to the Redis backend.
//
// The scripts announce ready and due edges with SPUBLISH on the namespace's
// channel "{ns}:news" (scripts/lib/news.lua): "r<topic>" for kReady,
// "d<µs>" for kDue. A subscription keeps one connection of its own (not one
// of the pool's: a subscribed connection takes no other commands), sends
// SSUBSCRIBE on it and runs one thread that reads the pushed messages and
// hands them to the callback. When the connection fails it reconnects with
// a backoff of a few milliseconds growing to a second, subscribes again and
// delivers kResync, since news may have been lost meanwhile.

#ifndef DELAYQ_BACKENDS_REDIS_INTERNAL_NEWS_H_
#define DELAYQ_BACKENDS_REDIS_INTERNAL_NEWS_H_

#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "backends/redis/client/connection.h"
#include "delayq/backend.h"

namespace delayq {
namespace redis_internal {

// SubscribeToNews()
//
// Connects to the server of `options` (its host and port or socket,
// password and timeouts; pub/sub ignores the db), subscribes to `channel`
// and returns once the server confirmed it, so that every announcement made
// after the return is delivered. Errors as for opening a pool connection
// (Unavailable, DeadlineExceeded, PermissionDenied), or the server's error
// for SSUBSCRIBE (a server older than Redis 7 does not know it).
absl::StatusOr<std::unique_ptr<NewsSubscription>> SubscribeToNews(
    const PoolOptions& options, std::string channel, NewsCallback on_news);

// ParseNews()
//
// The news in one message of the channel, or nothing for a message that is
// not news ("r" without a topic, "d" without a whole number, anything else).
std::optional<StoreNews> ParseNews(absl::string_view message);

}  // namespace redis_internal
}  // namespace delayq

#endif  // DELAYQ_BACKENDS_REDIS_INTERNAL_NEWS_H_
