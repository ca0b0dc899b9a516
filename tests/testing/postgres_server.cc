// Copyright delayq authors.

#include "tests/testing/postgres_server.h"

#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <postgresql/libpq-fe.h>
#include <pwd.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "tests/testing/files.h"
#include "tests/testing/loopback_port.h"

namespace delayq {
namespace testing {
namespace {

constexpr absl::string_view kVersionsDir = "/usr/lib/postgresql";

// The bin folder of the newest PostgreSQL installed; empty when none.
std::string FindBinDir() {
  int best = -1;
  if (DIR* d = opendir(std::string(kVersionsDir).c_str())) {
    while (dirent* e = readdir(d)) {
      int version = 0;
      const std::string postgres =
          absl::StrCat(kVersionsDir, "/", e->d_name, "/bin/postgres");
      if (absl::SimpleAtoi(e->d_name, &version) && version > best &&
          access(postgres.c_str(), X_OK) == 0) {
        best = version;
      }
    }
    closedir(d);
  }
  return best < 0 ? "" : absl::StrCat(kVersionsDir, "/", best, "/bin");
}

absl::StatusOr<int> FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return absl::InternalError(strerror(errno));
  absl::StatusOr<int> port = BindLoopback(fd);
  close(fd);
  return port;
}

absl::Status Errno(absl::string_view what) {
  return absl::InternalError(absl::StrCat(what, ": ", strerror(errno)));
}

}  // namespace

absl::StatusOr<std::unique_ptr<PostgresServer>> PostgresServer::Start(
    Durability durability) {
  std::unique_ptr<PostgresServer> server(new PostgresServer());
  server->durability_ = durability;
  server->bin_ = FindBinDir();
  if (server->bin_.empty()) {
    return absl::FailedPreconditionError(
        "no PostgreSQL server in /usr/lib/postgresql/*/bin; the PostgreSQL "
        "tests need it installed (Debian package postgresql)");
  }
  if (geteuid() == 0) {
    const passwd* pw = getpwnam("postgres");
    if (pw == nullptr) {
      return absl::FailedPreconditionError(
          "running as root, and there is no 'postgres' user to run the "
          "PostgreSQL server as (the Debian package postgresql makes it)");
    }
    server->drop_ = true;
    server->uid_ = pw->pw_uid;
    server->gid_ = pw->pw_gid;
  }
  // Under /tmp: short enough for the socket's path, and reachable by the
  // server's user.
  std::string templ = "/tmp/dq-pg-XXXXXX";
  if (mkdtemp(templ.data()) == nullptr) return Errno("mkdtemp");
  server->dir_ = templ;
  if (server->drop_ &&
      chown(server->dir_.c_str(), server->uid_, server->gid_) != 0) {
    if (errno == EINVAL) {
      // Bazel's Linux sandbox runs a test as root of a user namespace that
      // maps no other user.
      return absl::FailedPreconditionError(
          "running as root in a user namespace that has no 'postgres' user "
          "(Bazel's sandbox): tag the test \"no-sandbox\"");
    }
    return Errno(absl::StrCat("chown ", server->dir_));
  }
  const std::string pwfile = server->dir_ + "/pw";
  {
    std::ofstream out(pwfile);
    out << kPassword << "\n";
    if (!out.good()) return Errno(absl::StrCat("write ", pwfile));
  }
  if (server->drop_ && chown(pwfile.c_str(), server->uid_, server->gid_) != 0) {
    return Errno(absl::StrCat("chown ", pwfile));
  }
  absl::Status init = server->RunAsServerUser(
      {server->bin_ + "/initdb", "-D", server->dir_ + "/data", "-U",
       std::string(kUser), "--auth-local=trust", "--auth-host=scram-sha-256",
       "--pwfile=" + pwfile, "--no-sync", "--encoding=UTF8", "--locale=C"});
  if (!init.ok()) return init;
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

PostgresServer::~PostgresServer() {
  Stop().IgnoreError();
  std::error_code ignored;
  if (!dir_.empty()) std::filesystem::remove_all(dir_, ignored);
}

std::string PostgresServer::Url(absl::string_view schema,
                                absl::string_view database) const {
  return absl::StrCat("postgres://", kUser, ":", kPassword,
                      "@127.0.0.1:", port_, "/", database, "?schema=", schema);
}

pid_t PostgresServer::Spawn(const std::vector<std::string>& argv,
                            bool die_with_parent) const {
  std::vector<std::string> args = argv;
  std::vector<char*> cargv;
  for (std::string& a : args) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  const std::string log = dir_ + "/postgres.log";
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid != 0) return pid;
  const int out = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
  if (out >= 0) {
    dup2(out, 1);
    dup2(out, 2);
    close(out);
  }
  const int null = open("/dev/null", O_RDONLY);
  if (null >= 0) dup2(null, 0);
  if (drop_ &&
      (setgroups(0, nullptr) != 0 || setgid(gid_) != 0 || setuid(uid_) != 0)) {
    dprintf(2, "cannot become uid %d: %s\n", static_cast<int>(uid_),
            strerror(errno));
    _exit(126);
  }
  // After the change of user, which clears it. SIGQUIT: the server's
  // immediate shutdown, which also ends its own children.
  if (die_with_parent) {
    prctl(PR_SET_PDEATHSIG, SIGQUIT);
    if (getppid() != parent) _exit(1);
  }
  execv(cargv[0], cargv.data());
  _exit(127);
}

absl::Status PostgresServer::RunAsServerUser(
    const std::vector<std::string>& argv) const {
  const pid_t pid = Spawn(argv, /*die_with_parent=*/true);
  if (pid < 0) return Errno("fork");
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return Errno("waitpid");
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return absl::OkStatus();
  return absl::InternalError(
      absl::StrCat(argv[0], " failed (status ", status, "); log:\n", Log()));
}

absl::Status PostgresServer::Launch() {
  std::vector<std::string> argv = {bin_ + "/postgres",
                                   "-D",
                                   dir_ + "/data",
                                   "-p",
                                   absl::StrCat(port_),
                                   "-k",
                                   dir_,
                                   "-c",
                                   "listen_addresses=127.0.0.1",
                                   "-c",
                                   "max_connections=300",
                                   "-c",
                                   "shared_buffers=32MB"};
  if (durability_ == Durability::kFast) {
    for (const char* setting :
         {"fsync=off", "synchronous_commit=off", "full_page_writes=off"}) {
      argv.insert(argv.end(), {"-c", setting});
    }
  }
  pid_ = Spawn(argv, /*die_with_parent=*/true);
  if (pid_ < 0) return Errno("fork");
  const std::string conninfo =
      absl::StrCat("host=127.0.0.1 port=", port_,
                   " dbname=postgres user=", kUser, " connect_timeout=2");
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (absl::Now() < deadline) {
    // PQPING_OK: accepting connections (the password is not checked).
    if (PQping(conninfo.c_str()) == PQPING_OK) return absl::OkStatus();
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return absl::UnavailableError(absl::StrCat(
          "postgres exited at start (status ", status, "); log:\n", Log()));
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
  Stop().IgnoreError();
  return absl::DeadlineExceededError(absl::StrCat(
      "postgres did not accept connections within 30 s; log:\n", Log()));
}

namespace {

// The processes whose parent is `parent`, from /proc/*/stat.
std::vector<pid_t> ChildrenOf(pid_t parent) {
  std::vector<pid_t> children;
  DIR* d = opendir("/proc");
  if (d == nullptr) return children;
  while (dirent* e = readdir(d)) {
    int pid = 0;
    if (!absl::SimpleAtoi(e->d_name, &pid)) continue;
    // "PID (COMM) STATE PPID ...": COMM may hold spaces, so read after
    // its last ')'.
    const std::string stat = ReadFile(absl::StrCat("/proc/", pid, "/stat"));
    const size_t close = stat.rfind(')');
    if (close == std::string::npos) continue;
    char state = 0;
    int ppid = 0;
    if (sscanf(stat.c_str() + close + 1, " %c %d", &state, &ppid) == 2 &&
        ppid == parent) {
      children.push_back(pid);
    }
  }
  closedir(d);
  return children;
}

}  // namespace

absl::Status PostgresServer::SignalAll(int signal) const {
  if (pid_ <= 0) return absl::FailedPreconditionError("server not running");
  if (kill(pid_, signal) != 0) return Errno("kill");
  for (pid_t child : ChildrenOf(pid_)) kill(child, signal);
  return absl::OkStatus();
}

absl::Status PostgresServer::Freeze() { return SignalAll(SIGSTOP); }

absl::Status PostgresServer::Thaw() { return SignalAll(SIGCONT); }

absl::Status PostgresServer::Stop() {
  if (pid_ <= 0) return absl::OkStatus();
  // A frozen server would not hear the shutdown.
  SignalAll(SIGCONT).IgnoreError();
  kill(pid_, SIGINT);
  const absl::Time deadline = absl::Now() + absl::Seconds(20);
  int status = 0;
  while (waitpid(pid_, &status, WNOHANG) == 0) {
    if (absl::Now() > deadline) {
      kill(pid_, SIGQUIT);
      waitpid(pid_, &status, 0);
      break;
    }
    absl::SleepFor(absl::Milliseconds(10));
  }
  pid_ = -1;
  return absl::OkStatus();
}

absl::Status PostgresServer::RestartAfterCrash() {
  if (pid_ > 0) {
    kill(pid_, SIGQUIT);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
  }
  return Launch();
}

absl::Status PostgresServer::Restart() {
  absl::Status stopped = Stop();
  if (!stopped.ok()) return stopped;
  return Launch();
}

absl::Status PostgresServer::Psql(absl::string_view sql) const {
  return RunAsServerUser({bin_ + "/psql", "-X", "-q", "-v", "ON_ERROR_STOP=1",
                          "-h", dir_, "-p", absl::StrCat(port_), "-U",
                          std::string(kUser), "-d", "postgres", "-c",
                          std::string(sql)});
}

namespace {

absl::StatusOr<std::unique_ptr<PostgresServer>>* shared_server = nullptr;

void StopSharedServer() {
  delete shared_server;
  shared_server = nullptr;
}

}  // namespace

absl::StatusOr<PostgresServer*> SharedPostgresServer() {
  static const bool started = [] {
    shared_server = new absl::StatusOr<std::unique_ptr<PostgresServer>>(
        PostgresServer::Start());
    std::atexit(StopSharedServer);
    return true;
  }();
  (void)started;
  if (!shared_server->ok()) return shared_server->status();
  return shared_server->value().get();
}

std::string PostgresServer::Log() const {
  return ReadFile(dir_ + "/postgres.log");
}

}  // namespace testing
}  // namespace delayq
