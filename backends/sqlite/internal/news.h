// Copyright delayq authors.
//
// news.h — how processes that share one SQLite file tell each other of
// changes (Backend::Subscribe()), without querying the file in a loop.
//
// Beside the database `PATH` lives a folder `PATH-news/` (mode 0700, made by
// the first subscriber, like SQLite's own `-wal` and `-shm` companions). Each
// subscription binds one Unix datagram socket in it, named `<pid>-<random>`,
// and a thread of its own reads what arrives. A writer, right after a
// transaction with news COMMITS, sends one datagram to every socket in the
// folder: the news, one message a line, "r<topic>" (kReady), "d<µs>"
// (kDue) or "s<schedule name>" (kSchedules). So a subscriber that hears news
// and reads the file sees the change.
//
// Sends never block (MSG_DONTWAIT): a subscriber whose queue is full misses
// that datagram, and the scheduler's periodic look at the store covers it. A
// socket nobody listens on any more (its process died without unlinking
// it) refuses the datagram, and the sender removes it. A subscriber that
// finds its socket gone rebinds and delivers kResync.
//
// A socket's path can be at most 107 bytes, and database paths can be
// longer: both sides reach the folder through /proc/self/fd/<folder fd>/,
// which is always short.
//
// Why datagram sockets rather than inotify on a shared file: they carry the
// news itself (which topic, which time), so a subscriber needs no query to
// learn what changed, and a busy queue whose edges are rare sends nothing.

#ifndef DELAYQ_BACKENDS_SQLITE_INTERNAL_NEWS_H_
#define DELAYQ_BACKENDS_SQLITE_INTERNAL_NEWS_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "delayq/backend.h"

namespace delayq {
namespace sqlite_internal {

// The news folder of database `path`.
std::string NewsFolder(absl::string_view path);

// Messages as they travel.
std::string ReadyMessage(absl::string_view topic);
std::string DueMessage(int64_t at_us);
// kSchedules; the name is for people reading the messages.
std::string SchedulesMessage(absl::string_view name);
// The news in one message, or nothing for one that is not news.
std::optional<StoreNews> ParseNewsMessage(absl::string_view message);

// Sends news to every subscriber of one database. Not thread-safe (the
// backend sends under its own mutex).
class NewsSender {
 public:
  explicit NewsSender(std::string folder) : folder_(std::move(folder)) {}
  ~NewsSender();
  NewsSender(const NewsSender&) = delete;
  NewsSender& operator=(const NewsSender&) = delete;

  // Sends `messages` (at least one) in one datagram to every subscriber.
  // Best effort: errors are not reported (see above).
  void Send(const std::vector<std::string>& messages);

 private:
  const std::string folder_;
  int socket_ = -1;
};

// Subscribe() of the SQLite backend: binds a socket in the folder (made if
// missing), then calls `first` and delivers what it returns (if anything),
// then what arrives, to `on_news`, all from the subscription's thread. An
// error when the folder cannot be made or written (a read-only place).
absl::StatusOr<std::unique_ptr<NewsSubscription>> SubscribeToNews(
    std::string folder, NewsCallback on_news,
    std::function<std::optional<StoreNews>()> first);

}  // namespace sqlite_internal
}  // namespace delayq

#endif  // DELAYQ_BACKENDS_SQLITE_INTERNAL_NEWS_H_
