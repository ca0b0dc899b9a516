// Copyright delayq authors.
//
// connection.h — the connections a backend keeps to its server, and the
// scripts that run on them. Private to the Redis backend.
//
// The pool holds a few connections that every thread shares (see
// shared_connection.h): a call goes to the one with the fewest calls under
// way. A connection that failed is replaced by a new one at the next call
// that would use it. Every connection gets the connect and command
// timeouts, AUTH and SELECT.

#ifndef DELAYQ_BACKENDS_REDIS_CLIENT_CONNECTION_H_
#define DELAYQ_BACKENDS_REDIS_CLIENT_CONNECTION_H_

#include <hiredis/hiredis.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "backends/redis/client/link.h"
#include "backends/redis/client/locator.h"
#include "backends/redis/client/script_source.h"
#include "backends/redis/client/shared_connection.h"
#include "backends/redis/client/tls.h"
#include "src/common/mutex.h"

namespace delayq {
namespace redis_internal {

// One command: its arguments, binary safe.
using Command = std::vector<std::string>;

// ErrorReplyStatus()
//
// The status for an error reply: OOM -> ResourceExhausted; LOADING, BUSY,
// READONLY, MASTERDOWN, TRYAGAIN, CLUSTERDOWN, ERR max number of clients
// -> Unavailable; NOAUTH,
// WRONGPASS, NOPERM, ERR AUTH -> PermissionDenied; ERR DB index (SELECT out
// of range) -> InvalidArgument; anything else (a script
// error among them) -> Internal with the server's message.
absl::Status ErrorReplyStatus(absl::string_view message);

// Appends one command's header ("*<argc>") or one argument ("$<len>" and
// the bytes) in RESP to `out`, for PipelineEncoded().
void AppendArrayHeader(size_t argc, std::string* out);
void AppendArgument(absl::string_view arg, std::string* out);

struct PoolOptions {
  std::string host;
  int port = 6379;
  std::string unix_socket;  // when not empty, used instead of host and port
  std::string password;
  std::string username;  // an ACL user, with password
  int db = 0;
  absl::Duration connect_timeout;
  absl::Duration command_timeout;
  int size = 2;  // connections
  // When set, the server is the one it finds (host, port and unix_socket
  // are not used): the primary the sentinels name, or the cluster node
  // that serves the namespace's slot. Shared with the news subscription.
  std::shared_ptr<Locator> locator;
  // When set, every connection speaks TLS (the sentinels' too).
  std::shared_ptr<const TlsContext> tls;
};

// AuthCommand()
//
// AUTH [username] password for a new connection; empty when there is no
// password.
Command AuthCommand(const PoolOptions& options);

// Target
//
// The server a new connection goes to: the configured one, or the primary
// the sentinels name now (`endpoint` names it in messages).
struct Target : LinkTarget {
  // With a locator: its generation() for this address.
  uint64_t generation = 0;
};
absl::StatusOr<Target> Resolve(const PoolOptions& options);

// ForgetPrimary()
//
// A connection to `endpoint` failed, or found a replica there: with a
// locator, the next Resolve() looks again.
void ForgetPrimary(const PoolOptions& options, absl::string_view endpoint);

// FollowMoved()
//
// With a locator, a MOVED redirect among `replies` (a cluster's slot has
// moved) becomes its address; true when there was one.
bool FollowMoved(const PoolOptions& options, const std::vector<Reply>& replies);

// CheckPrimary()
//
// The status for a ROLE reply: OK for a primary, Unavailable for anything
// else (the sentinels' answer was stale).
absl::Status CheckPrimary(const redisReply* role, absl::string_view endpoint);

// Endpoint()
//
// How messages name the server of `options`: host:port (an IPv6 host in
// brackets), the socket's path, or the sentinels' primary.
std::string Endpoint(const PoolOptions& options);

// Dial()
//
// A new connection to `target` with the connect timeout and TLS of
// `options`; nothing is sent on it yet. Cancelled as soon as `cancel_fd`
// (if >= 0) is readable. Errors as Link::Dial() says.
absl::StatusOr<std::unique_ptr<Link>> Dial(const Target& target,
                                           const PoolOptions& options,
                                           int cancel_fd = -1);

// Exchange()
//
// Writes `commands` on `link` and reads one reply for each, by `deadline`.
// Error replies are returned as replies.
absl::StatusOr<std::vector<Reply>> Exchange(
    Link& link, const std::vector<Command>& commands,
    Clock::time_point deadline, int cancel_fd = -1);

// As Exchange(), for `count` commands already encoded in RESP in `request`.
absl::StatusOr<std::vector<Reply>> ExchangeEncoded(Link& link,
                                                   const std::string& request,
                                                   size_t count,
                                                   Clock::time_point deadline,
                                                   int cancel_fd = -1);

// Greeting()
//
// What a new connection sends first: AUTH when there is a password, SELECT
// when `select` and the db is not 0, and ROLE with sentinels (a server they
// named may have been demoted since). PING when none of them: one round
// trip on every new connection, so that an error the server sends on
// accepting it (too many clients) fails the opening instead of passing for
// the first call's reply.
std::vector<Command> Greeting(const PoolOptions& options, bool select);

// CheckGreeting()
//
// The replies to Greeting()'s `commands`: an error reply as
// ErrorReplyStatus() maps it, ROLE as CheckPrimary().
absl::Status CheckGreeting(const std::vector<Command>& commands,
                           const std::vector<Reply>& replies,
                           absl::string_view endpoint);

// ConnectionPool
class ConnectionPool {
 public:
  explicit ConnectionPool(PoolOptions options);
  ~ConnectionPool();
  const PoolOptions& options() const { return options_; }
  ConnectionPool(const ConnectionPool&) = delete;
  ConnectionPool& operator=(const ConnectionPool&) = delete;

  // Sends `commands` in one pipeline on one connection and returns their
  // replies in order. Error replies are returned as replies; a transport
  // failure (Unavailable, DeadlineExceeded) fails the whole call. Calls from
  // many threads run at once, sharing the connections.
  absl::StatusOr<std::vector<Reply>> Pipeline(
      const std::vector<Command>& commands);

  // As Pipeline(), for `count` commands already encoded in RESP in
  // `request` (see AppendArgument()).
  absl::StatusOr<std::vector<Reply>> PipelineEncoded(const std::string& request,
                                                     size_t count);

  // As PipelineEncoded(), on a connection of its own to `at`, opened for
  // the call and closed after it: for a cluster's ASK redirects, which only
  // a slot's migration brings.
  absl::StatusOr<std::vector<Reply>> PipelineAt(const HostPort& at,
                                                const std::string& request,
                                                size_t count);

 private:
  // What Choose() found: a connection to use, or a slot to open one in.
  struct Choice {
    std::shared_ptr<SharedConnection> use;
    int open = -1;
  };

  // A connection for one call, counted as in use (AddUser()) until the
  // caller's RemoveUser(): an idle one that is still open; else a new one
  // in an empty or failed slot, while every open one is busy; else the
  // least busy. When opening fails, the least busy open one, if any.
  absl::StatusOr<std::shared_ptr<SharedConnection>> Pick();
  Choice Choose() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // May be null.
  std::shared_ptr<SharedConnection> LeastBusy()
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A new connection and the server it reached.
  struct Opened {
    std::unique_ptr<Link> link;
    uint64_t generation;
  };
  absl::StatusOr<Opened> Connect();
  absl::StatusOr<std::unique_ptr<Link>> ConnectTo(const Target& target);

  const PoolOptions options_;
  const std::string endpoint_;  // the server, as error messages name it
  internal::Mutex mu_;
  // options_.size slots; empty until first needed.
  std::vector<std::shared_ptr<SharedConnection>> slots_ ABSL_GUARDED_BY(mu_);
  // With sentinels, the locator's generation when each slot's connection
  // was opened; an older one is retired (a switch notice moved the
  // primary).
  std::vector<uint64_t> slot_generation_ ABSL_GUARDED_BY(mu_);
  bool Current(size_t slot) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A call is opening a connection for the slot.
  std::vector<bool> connecting_ ABSL_GUARDED_BY(mu_);
  // Signalled when an opening ends; its count and outcome.
  internal::CondVar opened_;
  uint64_t openings_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Status last_opening_ ABSL_GUARDED_BY(mu_);
};

// Scripts
//
// The embedded Lua scripts, loaded once with SCRIPT LOAD and called with
// EVALSHA. A call answered with NOSCRIPT (the server restarted or its script
// cache was flushed) is repeated once with EVAL, which also caches the script
// again; nothing ran the first time, so the repeat is safe.
// The payload URL that marks UnconfirmedWriteError().
inline constexpr char kUnconfirmedWritePayload[] =
    "delayq.redis/unconfirmed-write";

// WaitOptions
//
// Replicated writes: a pipeline that runs a script which writes ends with
// WAIT `replicas` `timeout`, in the same round trip. 0 replicas: no WAIT.
struct WaitOptions {
  int replicas = 0;
  absl::Duration timeout = absl::Milliseconds(50);
};

// UnconfirmedWriteError()
//
// Unavailable, marked so that IsUnconfirmedWrite() (redis_backend.h) knows
// it: the calls ran on the primary, but only `confirmed` of `wanted`
// replicas had them within the timeout.
absl::Status UnconfirmedWriteError(int64_t confirmed, int wanted,
                                   absl::Duration timeout);

class Scripts {
 public:
  explicit Scripts(ConnectionPool* pool, WaitOptions wait = {})
      : pool_(pool), wait_(wait) {}

  // Loads `sources`, the scripts Run() runs by name. Call once before Run().
  absl::Status LoadAll(absl::Span<const ScriptSource> sources);

  struct Call {
    Call() = default;
    Call(absl::string_view script, std::vector<std::string> keys,
         std::vector<std::string> args = {})
        : script(script), keys(std::move(keys)), args(std::move(args)) {}

    absl::string_view script;  // the script's name, e.g. "ack"
    std::vector<std::string> keys;
    std::vector<std::string> args;
    // More arguments, after `args`, already encoded with AppendArgument():
    // a large batch is written once instead of being built as strings and
    // copied.
    std::string encoded_args;
    size_t encoded_count = 0;
  };

  // Runs `calls` in one pipeline and returns their replies in order. A call
  // whose keys or arguments are not the ones its script declares is a bug:
  // Internal, and nothing is sent. A reply
  // that is an error stays in the vector; callers map it. With WaitOptions
  // and a script that writes among `calls`: UnconfirmedWriteError() instead
  // of the replies when too few replicas confirmed them.
  absl::StatusOr<std::vector<Reply>> Run(const std::vector<Call>& calls);

  // OK when `call` passes the keys and arguments that `declared` declares
  // (its name and body are not read); Internal, saying what differs,
  // otherwise.
  static absl::Status CheckCall(const ScriptSource& declared, const Call& call);

  // Runs one call; an error reply becomes its status.
  absl::StatusOr<Reply> RunOne(Call call);

 private:
  struct Script {
    std::string body;
    std::string sha;
    int num_keys;
    int num_args;
    bool more_args;
    bool writes;  // its header does not say "-- Writes: nothing"
  };

  // Runs `request` (`count` calls), followed by WAIT when `wait` is set;
  // on the pool's server, or with `ask_at` on that node, after ASKING
  // (which the caller put before each call in `request`, and whose replies
  // are dropped).
  absl::StatusOr<std::vector<Reply>> Send(const std::string& request,
                                          size_t count, bool wait,
                                          const HostPort* ask_at = nullptr);
  // Sends again, by body, the calls whose replies say they did not run:
  // NOSCRIPT (the server lost its script cache), MOVED (a cluster slot
  // moved: the pool has followed it) and ASK (a slot is migrating: to the
  // node named, after ASKING). A few rounds at most, since a slot can move
  // again meanwhile.
  absl::Status Redo(const std::vector<const Script*>& scripts,
                    const std::vector<Call>& calls, bool wait,
                    std::vector<Reply>* replies);
  // Appends `call` of `script` in RESP, as EVALSHA (or EVAL with the body)
  // to `out`.
  static void Append(const Script& script, const Call& call, bool by_body,
                     std::string* out);

  ConnectionPool* pool_;
  const WaitOptions wait_;
  absl::flat_hash_map<std::string, Script> scripts_;
};

}  // namespace redis_internal
}  // namespace delayq

#endif  // DELAYQ_BACKENDS_REDIS_CLIENT_CONNECTION_H_
