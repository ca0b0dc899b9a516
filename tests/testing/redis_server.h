// Copyright delayq authors.
//
// redis_server.h — a real redis-server for tests, as a child process.
//
// Start() runs `redis-server` (found on PATH, else /usr/bin/redis-server) on
// a free loopback port and a Unix socket in a fresh temporary directory,
// without persistence unless asked, and returns once it answers PING. The
// server is stopped when the object is destroyed; it also dies with the test
// process. A missing redis-server is an error (FailedPrecondition), never a
// skip.
//
//   ASSERT_OK_AND_ASSIGN(auto server, delayq::testing::RedisServer::Start());
//   options.port = server->port();

#ifndef DELAYQ_TESTS_TESTING_REDIS_SERVER_H_
#define DELAYQ_TESTS_TESTING_REDIS_SERVER_H_

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "tests/testing/tls_files.h"

namespace delayq {
namespace testing {

class RedisServer {
 public:
  // Start()
  //
  // `extra_args` are appended to the command line as configuration, e.g.
  // {"--appendonly", "yes", "--appendfsync", "always"}.
  static absl::StatusOr<std::unique_ptr<RedisServer>> Start(
      std::vector<std::string> extra_args = {});

  // StartSentinel()
  //
  // A Redis Sentinel (redis-server --sentinel) watching the primary on
  // 127.0.0.1:`primary_port` as `master_name`, with `quorum`, a primary
  // judged down after 1 s without answers and a failover timeout of 3 s.
  // With `tls`, it also speaks TLS on tls_port() and reaches the servers
  // over TLS (`primary_port` is then the primary's TLS port).
  static absl::StatusOr<std::unique_ptr<RedisServer>> StartSentinel(
      const std::string& master_name, int primary_port, int quorum,
      const TlsFiles* tls = nullptr);

  // StartTls()
  //
  // A server that also speaks TLS on tls_port(), with the certificate and
  // key of `files`; client certificates must chain to its CA.
  // `auth_clients` is the server's tls-auth-clients: "no", "optional" or
  // "yes" (a client without a certificate is refused).
  static absl::StatusOr<std::unique_ptr<RedisServer>> StartTls(
      const TlsFiles& files, const std::string& auth_clients = "no",
      std::vector<std::string> extra_args = {});

  // StartClusterNode()
  //
  // A server in cluster mode, not yet part of any cluster, with its
  // cluster bus on a port of its own (the default, port + 10000, can be
  // past 65535 for the high ports tests get).
  static absl::StatusOr<std::unique_ptr<RedisServer>> StartClusterNode(
      std::vector<std::string> extra_args = {});

  ~RedisServer();
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  int port() const { return port_; }
  // StartTls() and a sentinel with TLS: the port that speaks TLS (port()
  // does not).
  int tls_port() const { return tls_port_; }
  // The server also listens on this Unix socket.
  const std::string& socket_path() const { return socket_path_; }
  const std::string& dir() const { return dir_; }
  bool running() const { return pid_ > 0; }

  // Stop()
  //
  // SIGTERM, then waits for the process (SIGKILL after 10 s).
  absl::Status Stop();

  // Kill()
  //
  // SIGKILL: a crash. Nothing is flushed beyond what the server already
  // wrote.
  void Kill();

  // Restart()
  //
  // Starts the server again on the same port and directory (so an
  // append-only file written before is loaded), with `extra_args` replacing
  // the previous ones. Waits until it answers PING.
  absl::Status Restart(std::vector<std::string> extra_args);
  absl::Status Restart() { return Restart(extra_args_); }

 private:
  RedisServer() = default;
  absl::Status Launch();
  absl::Status LaunchArgs(std::vector<std::string> args);
  std::vector<std::string> ServerArgs() const;
  std::vector<std::string> SentinelArgs() const;
  static absl::StatusOr<std::unique_ptr<RedisServer>> Make(
      std::vector<std::string> extra_args, const std::string& sentinel_conf);
  void Reap(int signal);

  std::string binary_;
  std::string dir_;
  int port_ = 0;
  int tls_port_ = 0;
  std::string socket_path_;
  pid_t pid_ = -1;
  std::vector<std::string> extra_args_;
  // Set for a sentinel: the configuration file it runs from (and rewrites).
  std::string sentinel_conf_;
};

}  // namespace testing
}  // namespace delayq

#endif  // DELAYQ_TESTS_TESTING_REDIS_SERVER_H_
