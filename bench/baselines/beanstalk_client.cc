// Copyright delayq authors.

#include "bench/baselines/beanstalk_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace delayq {
namespace bench {

absl::StatusOr<std::unique_ptr<BeanstalkClient>> BeanstalkClient::Connect(
    const std::string& host, int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return absl::UnavailableError(std::strerror(errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1 ||
      connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    const std::string why = std::strerror(errno);
    close(fd);
    return absl::UnavailableError(
        absl::StrCat("beanstalkd at ", host, ":", port, ": ", why));
  }
  // Every command is one small write that waits for its reply.
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return std::unique_ptr<BeanstalkClient>(new BeanstalkClient(fd));
}

BeanstalkClient::~BeanstalkClient() { close(fd_); }

absl::Status BeanstalkClient::Send(absl::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = write(fd_, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return absl::UnavailableError(std::strerror(errno));
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return absl::OkStatus();
}

absl::Status BeanstalkClient::Fill() {
  char buf[4096];
  for (;;) {
    const ssize_t n = read(fd_, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) return absl::UnavailableError("beanstalkd closed the link");
    if (n < 0) return absl::UnavailableError(std::strerror(errno));
    in_.append(buf, static_cast<size_t>(n));
    return absl::OkStatus();
  }
}

absl::StatusOr<std::string> BeanstalkClient::ReadLine() {
  for (;;) {
    const size_t end = in_.find("\r\n");
    if (end != std::string::npos) {
      std::string line = in_.substr(0, end);
      in_.erase(0, end + 2);
      return line;
    }
    if (absl::Status s = Fill(); !s.ok()) return s;
  }
}

absl::StatusOr<std::string> BeanstalkClient::ReadBody(size_t n) {
  while (in_.size() < n + 2) {
    if (absl::Status s = Fill(); !s.ok()) return s;
  }
  std::string body = in_.substr(0, n);
  in_.erase(0, n + 2);
  return body;
}

absl::StatusOr<std::string> BeanstalkClient::Expect(absl::string_view command,
                                                    absl::string_view want) {
  if (absl::Status s = Send(command); !s.ok()) return s;
  absl::StatusOr<std::string> line = ReadLine();
  if (!line.ok()) return line.status();
  if (!absl::StartsWith(*line, want)) {
    return absl::InternalError(absl::StrCat("beanstalkd: '",
                                            absl::StripSuffix(command, "\r\n"),
                                            "' answered '", *line, "'"));
  }
  return line;
}

absl::Status BeanstalkClient::Use(absl::string_view tube) {
  return Expect(absl::StrCat("use ", tube, "\r\n"), "USING").status();
}

absl::Status BeanstalkClient::WatchOnly(absl::string_view tube) {
  absl::StatusOr<std::string> watched =
      Expect(absl::StrCat("watch ", tube, "\r\n"), "WATCHING");
  if (!watched.ok()) return watched.status();
  return Expect("ignore default\r\n", "WATCHING").status();
}

absl::StatusOr<uint64_t> BeanstalkClient::Put(absl::string_view body,
                                              int ttr_s) {
  absl::StatusOr<std::string> line = Expect(
      absl::StrCat("put 0 0 ", ttr_s, " ", body.size(), "\r\n", body, "\r\n"),
      "INSERTED ");
  if (!line.ok()) return line.status();
  uint64_t id;
  if (!absl::SimpleAtoi(absl::string_view(*line).substr(9), &id)) {
    return absl::InternalError(absl::StrCat("beanstalkd: put: ", *line));
  }
  return id;
}

absl::StatusOr<std::optional<BeanstalkClient::Reserved>>
BeanstalkClient::Reserve(int timeout_s) {
  if (absl::Status s =
          Send(absl::StrCat("reserve-with-timeout ", timeout_s, "\r\n"));
      !s.ok()) {
    return s;
  }
  absl::StatusOr<std::string> line = ReadLine();
  if (!line.ok()) return line.status();
  if (*line == "TIMED_OUT") return std::optional<Reserved>();
  // RESERVED <id> <bytes>
  const std::vector<absl::string_view> f = absl::StrSplit(*line, ' ');
  Reserved job;
  size_t bytes;
  if (f.size() != 3 || f[0] != "RESERVED" || !absl::SimpleAtoi(f[1], &job.id) ||
      !absl::SimpleAtoi(f[2], &bytes)) {
    return absl::InternalError(absl::StrCat("beanstalkd: reserve: ", *line));
  }
  absl::StatusOr<std::string> body = ReadBody(bytes);
  if (!body.ok()) return body.status();
  job.body = *std::move(body);
  return std::optional<Reserved>(std::move(job));
}

absl::Status BeanstalkClient::Delete(uint64_t id) {
  return Expect(absl::StrCat("delete ", id, "\r\n"), "DELETED").status();
}

}  // namespace bench
}  // namespace delayq
