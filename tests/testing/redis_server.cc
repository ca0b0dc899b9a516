// Copyright delayq authors.

#include "tests/testing/redis_server.h"

#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "tests/testing/files.h"
#include "tests/testing/loopback_port.h"
#include "tests/testing/temp_path.h"

namespace delayq {
namespace testing {
namespace {

std::string FindBinary() {
  const char* path = getenv("PATH");
  if (path != nullptr) {
    for (absl::string_view dir : absl::StrSplit(path, ':')) {
      if (dir.empty()) continue;
      std::string candidate = absl::StrCat(dir, "/redis-server");
      if (access(candidate.c_str(), X_OK) == 0) return candidate;
    }
  }
  if (access("/usr/bin/redis-server", X_OK) == 0) {
    return "/usr/bin/redis-server";
  }
  return "";
}

// The configuration of a server that also speaks TLS on `port`.
std::vector<std::string> TlsArgs(const TlsFiles& files, int port,
                                 const std::string& auth_clients) {
  return {"--tls-port",         absl::StrCat(port), "--tls-cert-file",
          files.server_cert,    "--tls-key-file",   files.server_key,
          "--tls-ca-cert-file", files.ca_cert,      "--tls-auth-clients",
          auth_clients};
}

// A port the kernel just handed out on loopback. Another process could take
// it before redis binds it; Launch() then fails and says so.
absl::StatusOr<int> FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return absl::InternalError(strerror(errno));
  absl::StatusOr<int> port = BindLoopback(fd);
  close(fd);
  return port;
}

bool Pings(int port) {
  timeval tv{0, 200 * 1000};
  redisContext* c = redisConnectWithTimeout("127.0.0.1", port, tv);
  if (c == nullptr) return false;
  bool ok = false;
  if (c->err == 0) {
    redisSetTimeout(c, tv);
    auto* r = static_cast<redisReply*>(redisCommand(c, "PING"));
    ok = r != nullptr && r->type == REDIS_REPLY_STATUS &&
         std::string(r->str, r->len) == "PONG";
    if (r != nullptr) freeReplyObject(r);
  }
  redisFree(c);
  return ok;
}

}  // namespace

absl::StatusOr<std::unique_ptr<RedisServer>> RedisServer::StartSentinel(
    const std::string& master_name, int primary_port, int quorum,
    const TlsFiles* tls) {
  const std::string& name = master_name;
  std::vector<std::string> args;
  int tls_port = 0;
  if (tls != nullptr) {
    absl::StatusOr<int> port = FreePort();
    if (!port.ok()) return port.status();
    tls_port = *port;
    // tls-replication: the sentinel reaches the servers it watches over
    // TLS too.
    args = TlsArgs(*tls, tls_port, "no");
    args.insert(args.end(), {"--tls-replication", "yes"});
  }
  absl::StatusOr<std::unique_ptr<RedisServer>> server =
      Make(std::move(args),
           absl::StrCat("sentinel monitor ", name, " 127.0.0.1 ", primary_port,
                        " ", quorum, "\n", "sentinel down-after-milliseconds ",
                        name, " 1000\n", "sentinel failover-timeout ", name,
                        " 3000\n", "sentinel parallel-syncs ", name, " 1\n"));
  if (server.ok()) (*server)->tls_port_ = tls_port;
  return server;
}

absl::StatusOr<std::unique_ptr<RedisServer>> RedisServer::Start(
    std::vector<std::string> extra_args) {
  return Make(std::move(extra_args), "");
}

absl::StatusOr<std::unique_ptr<RedisServer>> RedisServer::StartTls(
    const TlsFiles& files, const std::string& auth_clients,
    std::vector<std::string> extra_args) {
  absl::StatusOr<int> tls_port = FreePort();
  if (!tls_port.ok()) return tls_port.status();
  std::vector<std::string> args = TlsArgs(files, *tls_port, auth_clients);
  args.insert(args.end(), extra_args.begin(), extra_args.end());
  absl::StatusOr<std::unique_ptr<RedisServer>> server =
      Make(std::move(args), "");
  if (server.ok()) (*server)->tls_port_ = *tls_port;
  return server;
}

absl::StatusOr<std::unique_ptr<RedisServer>> RedisServer::StartClusterNode(
    std::vector<std::string> extra_args) {
  absl::StatusOr<int> bus_port = FreePort();
  if (!bus_port.ok()) return bus_port.status();
  std::vector<std::string> args = {
      "--cluster-enabled",      "yes",
      "--cluster-config-file",  "nodes.conf",
      "--cluster-node-timeout", "1000",
      "--cluster-port",         absl::StrCat(*bus_port)};
  args.insert(args.end(), extra_args.begin(), extra_args.end());
  return Make(std::move(args), "");
}

absl::StatusOr<std::unique_ptr<RedisServer>> RedisServer::Make(
    std::vector<std::string> extra_args, const std::string& sentinel_conf) {
  std::unique_ptr<RedisServer> server(new RedisServer());
  server->binary_ = FindBinary();
  if (server->binary_.empty()) {
    return absl::FailedPreconditionError(
        "redis-server not found on PATH or at /usr/bin/redis-server; the "
        "Redis tests need it installed (Debian package redis-server)");
  }
  server->dir_ = MakeTempDir("redis");
  if (server->dir_.empty()) {
    return absl::InternalError(absl::StrCat("mkdir: ", strerror(errno)));
  }
  // A socket path must fit sockaddr_un (107 bytes); the test's temporary
  // directory can be deeper than that.
  server->socket_path_ = server->dir_ + "/redis.sock";
  if (server->socket_path_.size() > 100) {
    std::string short_templ = "/tmp/dq-redis-XXXXXX";
    if (mkdtemp(short_templ.data()) == nullptr) {
      return absl::InternalError(absl::StrCat("mkdtemp: ", strerror(errno)));
    }
    server->socket_path_ = short_templ + "/redis.sock";
  }
  if (!sentinel_conf.empty()) {
    // A sentinel runs from a file of its own, which it rewrites.
    server->sentinel_conf_ = server->dir_ + "/sentinel.conf";
    std::ofstream conf(server->sentinel_conf_);
    conf << sentinel_conf;
    if (!conf.good()) {
      return absl::InternalError("cannot write " + server->sentinel_conf_);
    }
  }
  server->extra_args_ = std::move(extra_args);
  absl::Status last;
  for (int attempt = 0; attempt < 3; ++attempt) {
    absl::StatusOr<int> port = FreePort();
    if (!port.ok()) return port.status();
    server->port_ = *port;
    last = server->Launch();
    if (last.ok()) return server;
  }
  return last;
}

RedisServer::~RedisServer() {
  if (pid_ > 0) Stop().IgnoreError();
  const std::string socket_dir =
      socket_path_.substr(0, socket_path_.rfind('/'));
  if (!socket_path_.empty() && socket_dir != dir_) {
    unlink(socket_path_.c_str());
    rmdir(socket_dir.c_str());
  }
}

absl::Status RedisServer::Launch() {
  if (!sentinel_conf_.empty()) return LaunchArgs(SentinelArgs());
  return LaunchArgs(ServerArgs());
}

std::vector<std::string> RedisServer::SentinelArgs() const {
  std::vector<std::string> args = {binary_,
                                   sentinel_conf_,
                                   "--sentinel",
                                   "--port",
                                   absl::StrCat(port_),
                                   "--bind",
                                   "127.0.0.1",
                                   "--daemonize",
                                   "no",
                                   "--dir",
                                   dir_,
                                   "--logfile",
                                   dir_ + "/redis.log"};
  args.insert(args.end(), extra_args_.begin(), extra_args_.end());
  return args;
}

std::vector<std::string> RedisServer::ServerArgs() const {
  std::vector<std::string> args = {binary_,
                                   "--port",
                                   absl::StrCat(port_),
                                   "--bind",
                                   "127.0.0.1",
                                   "--save",
                                   "",
                                   "--appendonly",
                                   "no",
                                   "--daemonize",
                                   "no",
                                   "--unixsocket",
                                   socket_path_,
                                   "--unixsocketperm",
                                   "700",
                                   "--dir",
                                   dir_,
                                   "--logfile",
                                   dir_ + "/redis.log"};
  args.insert(args.end(), extra_args_.begin(), extra_args_.end());
  return args;
}

absl::Status RedisServer::LaunchArgs(std::vector<std::string> args) {
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  const pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0)
    return absl::InternalError(absl::StrCat("fork: ", strerror(errno)));
  if (pid == 0) {
    // Die with the test process, however it ends.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(1);
    execv(argv[0], argv.data());
    _exit(127);
  }
  pid_ = pid;
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (absl::Now() < deadline) {
    if (Pings(port_)) return absl::OkStatus();
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return absl::UnavailableError(
          absl::StrCat("redis-server exited at start (status ", status,
                       "); log:\n", ReadFile(dir_ + "/redis.log")));
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
  Reap(SIGKILL);
  return absl::DeadlineExceededError(
      absl::StrCat("redis-server did not answer PING within 10 s; log:\n",
                   ReadFile(dir_ + "/redis.log")));
}

void RedisServer::Reap(int signal) {
  if (pid_ <= 0) return;
  kill(pid_, signal);
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (true) {
    int status = 0;
    pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_ || (r < 0 && errno == ECHILD)) break;
    if (absl::Now() > deadline) {
      kill(pid_, SIGKILL);
      waitpid(pid_, &status, 0);
      break;
    }
    absl::SleepFor(absl::Milliseconds(10));
  }
  pid_ = -1;
}

absl::Status RedisServer::Stop() {
  Reap(SIGTERM);
  return absl::OkStatus();
}

void RedisServer::Kill() { Reap(SIGKILL); }

absl::Status RedisServer::Restart(std::vector<std::string> extra_args) {
  if (pid_ > 0) Reap(SIGTERM);
  extra_args_ = std::move(extra_args);
  return Launch();
}

}  // namespace testing
}  // namespace delayq
