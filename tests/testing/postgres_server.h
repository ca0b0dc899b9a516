// Copyright delayq authors.
//
// postgres_server.h — a real PostgreSQL server for tests, as a child
// process.
//
// Start() runs initdb into a fresh directory, then `postgres` on a free
// loopback port (listen_addresses=127.0.0.1) with its Unix socket in that
// directory, and returns once it accepts connections. The server is
// stopped (fast shutdown) and its directory removed when the object is
// destroyed; it also dies with the test process. The binaries come from
// /usr/lib/postgresql/<version>/bin (the newest version there); a missing
// server is an error (FailedPrecondition), never a skip.
//
// initdb and postgres refuse to run as root. When the test runs as root
// (as it does in CI), the helper runs them as the `postgres` system user
// the Debian package makes: the child process drops to that user's uid and
// gid itself (setgid, setgroups, setuid) before it execs, so nothing like
// runuser or sudo (or their PAM stacks) is needed. The directory is under
// /tmp rather than $TEST_TMPDIR, whose parents (/root/.cache/...) that
// user cannot enter, and is made over to that user. As any other user, the
// helper runs them as itself. Bazel's Linux sandbox runs a test as root of
// a user namespace in which no other user exists, so a test that uses this
// helper is tagged "no-sandbox".
//
// Connections over TCP authenticate with scram-sha-256 as user "postgres"
// and password(); over the socket they are trusted.
//
//   ASSERT_OK_AND_ASSIGN(auto server,
//   delayq::testing::PostgresServer::Start()); std::string url =
//   server->Url("my_schema");

#ifndef DELAYQ_TESTS_TESTING_POSTGRES_SERVER_H_
#define DELAYQ_TESTS_TESTING_POSTGRES_SERVER_H_

#include <sys/types.h>

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace delayq {
namespace testing {

class PostgresServer {
 public:
  // How the server keeps commits. kFast (fsync, synchronous_commit and
  // full_page_writes off) suits tests that never stop it uncleanly; a
  // crash may then lose commits it acknowledged. kDurable is PostgreSQL's
  // default, as deployed: a commit is acknowledged once its WAL is on disk.
  enum class Durability { kFast, kDurable };

  static absl::StatusOr<std::unique_ptr<PostgresServer>> Start(
      Durability durability = Durability::kFast);

  ~PostgresServer();
  PostgresServer(const PostgresServer&) = delete;
  PostgresServer& operator=(const PostgresServer&) = delete;

  int port() const { return port_; }
  // The directory that holds the server's Unix socket.
  const std::string& socket_dir() const { return dir_; }
  static constexpr absl::string_view kUser = "postgres";
  static constexpr absl::string_view kPassword = "dq-test-secret";
  static absl::string_view password() { return kPassword; }

  // postgres://postgres:PASSWORD@127.0.0.1:PORT/DATABASE?schema=SCHEMA
  std::string Url(absl::string_view schema,
                  absl::string_view database = "postgres") const;

  // Stop()
  //
  // Fast shutdown (SIGINT): open connections are ended; waits for the
  // server to exit.
  absl::Status Stop();

  // Restart()
  //
  // Starts the server again on the same port and data, and waits until it
  // accepts connections.
  absl::Status Restart();

  // RestartAfterCrash()
  //
  // Immediate shutdown (SIGQUIT, as `pg_ctl stop -m immediate`): every
  // server process quits at once, nothing is flushed or checkpointed. Then
  // the server starts again, recovering from its WAL, as Restart() does.
  absl::Status RestartAfterCrash();

  // Freeze()
  //
  // SIGSTOP to the server and every process of it (the postmaster first,
  // so it starts no more): connections stay open and the kernel still
  // accepts and acknowledges on them, but nothing answers, as with a
  // frozen host or a network that drops packets silently. Thaw() sends
  // SIGCONT; Stop() (and so the destructor) thaws first.
  absl::Status Freeze();
  absl::Status Thaw();

  // Runs `sql` as the superuser over the socket (psql), for a test's setup.
  absl::Status Psql(absl::string_view sql) const;

 private:
  PostgresServer() = default;
  absl::Status Launch();
  // Sends `signal` to the postmaster, then to each of its children.
  absl::Status SignalAll(int signal) const;
  // Runs `argv` as the server's user and waits for it; its output goes to
  // the log.
  absl::Status RunAsServerUser(const std::vector<std::string>& argv) const;
  // Forks a child that becomes the server's user and execs `argv`.
  pid_t Spawn(const std::vector<std::string>& argv, bool die_with_parent) const;
  std::string Log() const;

  std::string bin_;  // /usr/lib/postgresql/N/bin
  std::string dir_;  // the socket, data/ and postgres.log
  int port_ = 0;
  uid_t uid_ = 0;
  gid_t gid_ = 0;
  bool drop_ = false;  // run the binaries as uid_/gid_
  Durability durability_ = Durability::kFast;
  pid_t pid_ = -1;
};

// SharedPostgresServer()
//
// One server for the whole test process: started at the first call, stopped
// (and its directory removed) when the process exits. The error of its
// start, for every call, when it could not start.
absl::StatusOr<PostgresServer*> SharedPostgresServer();

}  // namespace testing
}  // namespace delayq

#endif  // DELAYQ_TESTS_TESTING_POSTGRES_SERVER_H_
