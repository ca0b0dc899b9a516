// Copyright delayq authors.

#include "backends/sqlite/internal/news.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <thread>
#include <utility>

#include "absl/random/random.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"

namespace delayq {
namespace sqlite_internal {
namespace {

// How often an idle subscriber checks that its socket is still there.
constexpr int kCheckEveryMs = 5000;
// Room for a burst of news before datagrams are dropped.
constexpr int kReceiveBuffer = 1 << 20;
// The largest datagram: news of one transaction (a batch touching many
// topics may carry several hundred).
constexpr size_t kMaxDatagram = 64 * 1024;

absl::Status Errno(absl::string_view what, absl::string_view path) {
  const int e = errno;
  const std::string text = absl::StrCat(what, " ", path, ": ", strerror(e));
  if (e == EACCES || e == EPERM || e == EROFS) {
    return absl::PermissionDeniedError(text);
  }
  return absl::UnavailableError(text);
}

// The address of `name` in the folder open as `folder_fd`.
sockaddr_un AddressIn(int folder_fd, absl::string_view name) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string path = absl::StrCat("/proc/self/fd/", folder_fd, "/", name);
  std::memcpy(addr.sun_path, path.data(),
              std::min(path.size(), sizeof(addr.sun_path) - 1));
  return addr;
}

class Subscription : public NewsSubscription {
 public:
  Subscription(std::string folder, NewsCallback on_news)
      : folder_(std::move(folder)), on_news_(std::move(on_news)) {}

  ~Subscription() override {
    if (thread_.joinable()) {
      const uint64_t one = 1;
      (void)!write(stop_, &one, sizeof(one));
      thread_.join();
    }
    Unbind();
    if (stop_ >= 0) close(stop_);
    if (folder_fd_ >= 0) close(folder_fd_);
  }

  absl::Status Open(const std::function<std::optional<StoreNews>()>& first) {
    if (mkdir(folder_.c_str(), 0700) != 0 && errno != EEXIST) {
      return Errno("cannot make the news folder", folder_);
    }
    folder_fd_ = open(folder_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (folder_fd_ < 0) return Errno("cannot open the news folder", folder_);
    stop_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (stop_ < 0) return Errno("eventfd for", folder_);
    if (absl::Status s = Bind(); !s.ok()) return s;
    std::optional<StoreNews> first_news = first();
    thread_ = std::thread([this, first = std::move(first_news)] {
      if (first) on_news_(*first);
      Loop();
    });
    return absl::OkStatus();
  }

 private:
  absl::Status Bind() {
    socket_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (socket_ < 0) return Errno("socket for", folder_);
    const int size = kReceiveBuffer;
    setsockopt(socket_, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
    absl::BitGen gen;
    name_ =
        absl::StrCat(getpid(), "-", absl::Hex(absl::Uniform<uint64_t>(gen)));
    const sockaddr_un addr = AddressIn(folder_fd_, name_);
    if (bind(socket_, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) !=
        0) {
      absl::Status s = Errno("cannot bind a socket in", folder_);
      close(socket_);
      socket_ = -1;
      return s;
    }
    return absl::OkStatus();
  }

  void Unbind() {
    if (socket_ < 0) return;
    close(socket_);
    socket_ = -1;
    unlinkat(folder_fd_, name_.c_str(), 0);
  }

  // Whether the socket's name is still in the folder.
  bool StillBound() const {
    struct stat st;
    return fstatat(folder_fd_, name_.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
           S_ISSOCK(st.st_mode);
  }

  void Loop() {
    std::string buffer(kMaxDatagram, '\0');
    for (;;) {
      pollfd fds[2] = {{stop_, POLLIN, 0}, {socket_, POLLIN, 0}};
      const int ready = poll(fds, 2, kCheckEveryMs);
      if (ready < 0 && errno != EINTR) return;
      if (fds[0].revents != 0) return;
      if (ready == 0 && !StillBound()) {
        // Someone took our name away (a sender that thought we were gone):
        // news since then may be lost.
        Unbind();
        if (!Bind().ok()) return;
        on_news_(StoreNews());
        continue;
      }
      for (;;) {
        const ssize_t n = recv(socket_, buffer.data(), buffer.size(), 0);
        if (n < 0) break;  // EAGAIN: drained
        for (absl::string_view line : absl::StrSplit(
                 absl::string_view(buffer.data(), static_cast<size_t>(n)), '\n',
                 absl::SkipEmpty())) {
          if (std::optional<StoreNews> news = ParseNewsMessage(line)) {
            on_news_(*news);
          }
        }
      }
    }
  }

  const std::string folder_;
  const NewsCallback on_news_;
  int folder_fd_ = -1;
  int stop_ = -1;
  int socket_ = -1;
  std::string name_;
  std::thread thread_;
};

}  // namespace

std::string NewsFolder(absl::string_view path) {
  return absl::StrCat(path, "-news");
}

std::string ReadyMessage(absl::string_view topic) {
  return absl::StrCat("r", topic);
}

std::string DueMessage(int64_t at_us) { return absl::StrCat("d", at_us); }

std::string SchedulesMessage(absl::string_view name) {
  return absl::StrCat("s", name);
}

std::optional<StoreNews> ParseNewsMessage(absl::string_view message) {
  if (message.size() < 2) return std::nullopt;
  StoreNews news;
  const absl::string_view rest = message.substr(1);
  if (message[0] == 'r') {
    news.kind = StoreNews::Kind::kReady;
    news.topic = std::string(rest);
    return news;
  }
  if (message[0] == 's') {
    news.kind = StoreNews::Kind::kSchedules;
    return news;
  }
  int64_t at_us;
  if (message[0] == 'd' && absl::SimpleAtoi(rest, &at_us)) {
    news.kind = StoreNews::Kind::kDue;
    news.at = absl::FromUnixMicros(at_us);
    return news;
  }
  return std::nullopt;
}

NewsSender::~NewsSender() {
  if (socket_ >= 0) close(socket_);
}

void NewsSender::Send(const std::vector<std::string>& messages) {
  const int folder_fd =
      open(folder_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (folder_fd < 0) return;  // nobody ever subscribed
  DIR* dir = fdopendir(dup(folder_fd));
  if (dir == nullptr) {
    close(folder_fd);
    return;
  }
  if (socket_ < 0) {
    socket_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  }
  const std::string datagram = absl::StrJoin(messages, "\n");
  while (dirent* entry = readdir(dir)) {
    if (entry->d_name[0] == '.' || socket_ < 0) continue;
    const sockaddr_un addr = AddressIn(folder_fd, entry->d_name);
    if (sendto(socket_, datagram.data(), datagram.size(),
               MSG_DONTWAIT | MSG_NOSIGNAL,
               reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) < 0 &&
        errno == ECONNREFUSED) {
      // Nobody listens there any more: its process died.
      unlinkat(folder_fd, entry->d_name, 0);
    }
  }
  closedir(dir);
  close(folder_fd);
}

absl::StatusOr<std::unique_ptr<NewsSubscription>> SubscribeToNews(
    std::string folder, NewsCallback on_news,
    std::function<std::optional<StoreNews>()> first) {
  auto subscription =
      std::make_unique<Subscription>(std::move(folder), std::move(on_news));
  // Open() binds before `first` runs: news sent after that is not missed.
  if (absl::Status s = subscription->Open(first); !s.ok()) return s;
  return std::unique_ptr<NewsSubscription>(std::move(subscription));
}

}  // namespace sqlite_internal
}  // namespace delayq
