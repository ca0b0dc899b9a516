// Copyright delayq authors.

#include "tests/testing/fault_proxy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace delayq {
namespace testing {
namespace {

// How often a connection's thread looks at the faults while idle.
constexpr int kPollMs = 10;

bool SendAll(int fd, const char* data, size_t n) {
  while (n > 0) {
    const ssize_t w = send(fd, data, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    data += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

int ConnectUpstream(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

void NoDelay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

}  // namespace

absl::StatusOr<std::unique_ptr<FaultProxy>> FaultProxy::Start(int upstream) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::InternalError(strerror(errno));
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = 0;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      listen(fd, 64) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    const std::string error = strerror(errno);
    close(fd);
    return absl::InternalError(absl::StrCat("proxy listen: ", error));
  }
  return std::unique_ptr<FaultProxy>(
      new FaultProxy(fd, ntohs(addr.sin_port), upstream));
}

FaultProxy::FaultProxy(int listen_fd, int port, int upstream)
    : listen_fd_(listen_fd), port_(port), upstream_(upstream) {
  acceptor_ = std::thread([this] { AcceptLoop(); });
}

FaultProxy::~FaultProxy() {
  stopping_ = true;
  acceptor_.join();
  close(listen_fd_);
  std::vector<std::thread> threads;
  {
    absl::MutexLock lock(&mu_);
    threads.swap(threads_);
  }
  for (std::thread& t : threads) t.join();
}

void FaultProxy::DropAll() { ++drop_generation_; }
void FaultProxy::SetRefuse(bool refuse) { refuse_ = refuse; }
void FaultProxy::SetDelay(absl::Duration delay) {
  delay_us_ = absl::ToInt64Microseconds(delay);
}
void FaultProxy::SetBlackHole(bool on) { black_hole_ = on; }

void FaultProxy::CutNextReply(int64_t bytes) {
  absl::MutexLock lock(&mu_);
  cut_left_ = bytes;
}

void FaultProxy::Clear() {
  refuse_ = false;
  black_hole_ = false;
  delay_us_ = 0;
  absl::MutexLock lock(&mu_);
  cut_left_ = -1;
}

void FaultProxy::AcceptLoop() {
  while (!stopping_) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (poll(&p, 1, kPollMs) <= 0) continue;
    const int client = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) continue;
    ++accepted_;
    if (refuse_) {
      close(client);
      continue;
    }
    NoDelay(client);
    const uint64_t generation = drop_generation_.load();
    absl::MutexLock lock(&mu_);
    threads_.emplace_back(
        [this, client, generation] { Forward(client, generation); });
  }
}

int64_t FaultProxy::ReplyAllowance(int64_t n, bool* cut) {
  absl::MutexLock lock(&mu_);
  *cut = false;
  if (cut_left_ < 0) return n;
  const int64_t allowed = std::min(n, cut_left_);
  cut_left_ -= allowed;
  if (cut_left_ == 0) {
    cut_left_ = -1;
    *cut = true;
  }
  return allowed;
}

void FaultProxy::Forward(int client, uint64_t generation) {
  // The server side is reached from this thread, so that a black hole or a
  // refused upstream holds up only this connection.
  const int server = ConnectUpstream(upstream_);
  if (server < 0) {
    close(client);
    return;
  }
  NoDelay(server);
  char buffer[64 << 10];
  pollfd fds[2] = {{client, POLLIN, 0}, {server, POLLIN, 0}};
  while (!stopping_ && drop_generation_.load() == generation) {
    if (poll(fds, 2, kPollMs) <= 0) continue;
    bool done = false;
    for (int i = 0; i < 2 && !done; ++i) {
      if ((fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      const ssize_t r = recv(fds[i].fd, buffer, sizeof(buffer), 0);
      if (r <= 0) {
        done = true;
        break;
      }
      if (black_hole_) continue;  // read and lost
      const int64_t delay_us = delay_us_.load();
      if (delay_us > 0) absl::SleepFor(absl::Microseconds(delay_us));
      if (drop_generation_.load() != generation) {
        done = true;
        break;
      }
      const int to = i == 0 ? server : client;
      int64_t n = r;
      bool cut = false;
      if (i == 1) n = ReplyAllowance(r, &cut);
      if (!SendAll(to, buffer, static_cast<size_t>(n)) || cut) {
        if (cut) ++cuts_;
        done = true;
      }
    }
    if (done) break;
  }
  close(client);
  close(server);
}

}  // namespace testing
}  // namespace delayq
