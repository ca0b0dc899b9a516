// Copyright delayq authors.

#include "bench/serve/lean_client.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace delayq {
namespace bench {

LeanClient::LeanClient(int port) {
  fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int yes = 1;
  setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof(yes));
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(port);
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd_, reinterpret_cast<sockaddr*>(&to), sizeof(to)) != 0) {
    close(fd_);
    fd_ = -1;
  }
}

LeanClient::~LeanClient() {
  if (fd_ >= 0) close(fd_);
}

bool LeanClient::Receive() {
  char chunk[64 << 10];
  ssize_t got;
  do {
    got = recv(fd_, chunk, sizeof(chunk), 0);
  } while (got < 0 && errno == EINTR);
  if (got <= 0) return false;
  in_.append(chunk, static_cast<size_t>(got));
  return true;
}

int LeanClient::Post(absl::string_view path, absl::string_view body,
                     std::string* reply) {
  if (fd_ < 0) return 0;
  const std::string request =
      absl::StrCat("POST ", path,
                   " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
                   "application/json\r\nContent-Length: ",
                   body.size(), "\r\n\r\n", body);
  if (send(fd_, request.data(), request.size(), MSG_NOSIGNAL) !=
      static_cast<ssize_t>(request.size())) {
    return 0;
  }
  size_t end;
  while ((end = in_.find("\r\n\r\n")) == std::string::npos) {
    if (!Receive()) return 0;
  }
  const absl::string_view head(in_.data(), end);
  int status = 0;
  size_t length = 0;
  const size_t at = head.find("Content-Length: ");
  if (head.size() < 12 || !absl::SimpleAtoi(head.substr(9, 3), &status) ||
      at == absl::string_view::npos ||
      !absl::SimpleAtoi(head.substr(at + 16, head.find("\r\n", at) - at - 16),
                        &length)) {
    return 0;
  }
  const size_t start = end + 4;
  while (in_.size() < start + length) {
    if (!Receive()) return 0;
  }
  reply->assign(in_, start, length);
  in_.erase(0, start + length);
  return status;
}

LeaseIds LeasesIn(absl::string_view reply) {
  constexpr absl::string_view kId = "\"id\":\"";
  constexpr absl::string_view kToken = "\"token\":\"";
  LeaseIds leases;
  size_t at = 0;
  while ((at = reply.find(kId, at)) != absl::string_view::npos) {
    const size_t id = at + kId.size();
    const size_t id_end = reply.find('"', id);
    const size_t token_at = reply.find(kToken, id_end);
    if (id_end == absl::string_view::npos ||
        token_at == absl::string_view::npos) {
      break;
    }
    const size_t token = token_at + kToken.size();
    const size_t token_end = reply.find('"', token);
    if (token_end == absl::string_view::npos) break;
    leases.emplace_back(std::string(reply.substr(id, id_end - id)),
                        std::string(reply.substr(token, token_end - token)));
    at = token_end;
  }
  return leases;
}

}  // namespace bench
}  // namespace delayq
