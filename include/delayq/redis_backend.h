// Copyright delayq authors.
//
// redis_backend.h — a Backend on a Redis server, shared by many processes on
// many machines.
//
// Every state transition is one Lua script, so it is atomic on the server and
// a crash of any client at any point loses no job. All keys of a store share
// the prefix "{ns}:", whose braces make "ns" the Redis Cluster hash tag: the
// keys of one namespace live in one slot, and several namespaces can share a
// server. Jobs are deleted when acknowledged or cancelled and the dead list of
// each topic is capped, so finished work leaves nothing behind. A namespace
// may also be spread over several hash tags, and so over several primaries
// of a Redis Cluster (RedisOptions::shards, with what it costs in ordering).
//
//   delayq::RedisOptions options;
//   options.host = "redis.internal";
//   options.ns = "orders";
//   options.time_source = delayq::RedisOptions::TimeSource::kServer;
//   auto backend = delayq::OpenRedisBackend(options);
//
// or from a URL:
//
//   auto options = delayq::ParseRedisUrl(
//       "redis://:secret@redis.internal:6379/2?namespace=orders&time=server");
//
// Durability is Redis's own: with `appendonly yes` and `appendfsync always`
// a job whose Add() returned OK survives a crash of the server.
//
// Dependencies (JobOptions::after) are held in the store's scripts, each
// transition settling its dependants in the same atomic step. A script
// touches one slot: on a namespace of shards > 1 a job and the jobs it waits
// for must lie on one shard (ids that share a {tag} do), or Add() returns
// InvalidArgument and stores nothing. Unsharded, on one server or a Cluster,
// every job of a namespace shares its slot, and any job may wait for any
// other.
// Batches (JobOptions::batch, OpenBatch()) are held the same way: a batch
// is its completion job's record, and the script that finishes a job of it
// counts it there and releases the completion job in the same step. On a
// namespace of shards > 1 a batch lives on the shard of its id and its jobs
// must too (ids that carry the batch's {tag} do), or Add() returns
// InvalidArgument and stores nothing.
//
// Thread-safety: a backend may be used from any number of threads. They share
// `pool_size` connections: calls made at the same time travel together on
// one connection, each still one round trip, so no call waits for another
// to finish first.

#ifndef DELAYQ_REDIS_BACKEND_H_
#define DELAYQ_REDIS_BACKEND_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "delayq/backend.h"
#include "delayq/counts.h"
#include "delayq/event_log.h"

namespace delayq {

// RedisEndpoint
//
// A server's host and port.
struct RedisEndpoint {
  std::string host;
  int port = 0;
};

// RedisTls
//
// TLS to the server, and to the sentinels (the URL's rediss:// and
// rediss+sentinel://). The server's certificate is always verified unless
// `insecure` says otherwise: it must chain to a CA of `ca_file` (or of the
// system's store when that is empty) and name the host dialled (or
// `server_name`), as a DNS name or, for an address, an IP address.
struct RedisTls {
  bool enabled = false;
  // PEM file of the CAs that may sign the server's certificate. Empty: the
  // system's CA store (Debian's ca-certificates).
  std::string ca_file;
  // A client certificate and its private key (PEM files), for a server that
  // asks for one (tls-auth-clients). Both or neither.
  std::string cert_file;
  std::string key_file;
  // The name the server's certificate must carry, also sent with SNI.
  // Empty: the host dialled (a sentinel names the primary by address, so a
  // primary's certificate needs that address, or set this).
  std::string server_name;
  // Skips every check of the server's certificate: the connection is
  // encrypted, but anyone on the path can pose as the server. Never the
  // default; for test servers with throwaway certificates.
  bool insecure = false;
};

// RedisOptions
//
// Where the server is and how the store behaves.
struct RedisOptions {
  std::string host = "127.0.0.1";
  int port = 6379;
  // A Unix domain socket path (Redis's `unixsocket`), for a server on the
  // same machine that listens on one. When not empty the backend connects
  // there and host and port are not used. It is not faster by itself: on a
  // 2-core host with many blocked client threads it measured slower than
  // TCP loopback (bench/README.md).
  std::string unix_socket;
  // Sent with AUTH on every new connection when not empty.
  std::string password;
  // With `password`, an ACL user (Redis 6 and later): AUTH username
  // password. Empty: AUTH password, for the default user.
  std::string username;
  // Redis Sentinel: when not empty, the store reaches the primary that
  // these sentinels name `sentinel_master`, and host, port and unix_socket
  // are not used. It asks them again whenever the primary it found stops
  // being one (a connection to it fails, it answers READONLY, ROLE calls it
  // a replica), so calls during a failover return Unavailable and later
  // calls reach the new primary, with no restart. Replication is
  // asynchronous: a job added just before a failover may be lost with the
  // old primary.
  std::vector<RedisEndpoint> sentinels;
  std::string sentinel_master;
  // Sent with AUTH to the sentinels when not empty (their requirepass).
  std::string sentinel_password;
  // Redis Cluster: when not empty, some of the cluster's nodes. The store
  // asks them which primary serves its namespace's slot (every key of a
  // namespace shares its hash tag, so the store lives in one slot) and
  // talks to that one; host, port and unix_socket are not used, and db
  // must be 0. A MOVED redirect moves the store to the new node at once, an
  // ASK redirect (a slot being migrated) sends that one call to the node
  // named, and a failed connection makes the next call ask again, so a
  // resharding or a failover needs no restart.
  std::vector<RedisEndpoint> cluster_nodes;
  // TLS to the server and the sentinels (not over a Unix socket).
  RedisTls tls;
  // Replicated writes: when above 0, every call that changes the store is
  // followed, in the same round trip, by WAIT `wait_replicas`
  // `wait_timeout` (which must be shorter than `command_timeout`). When
  // fewer replicas confirm it in time the call returns Unavailable with
  // IsUnconfirmedWrite() true: its change WAS made on the primary (an added
  // job exists, an ack took effect, a reserve's leases are lost to the
  // caller and come back after their ttr) but may be lost if the primary
  // fails before a replica has it. A retry of an Add with a caller-chosen
  // id then answers AlreadyExists; with generated ids it adds a second job.
  int wait_replicas = 0;
  absl::Duration wait_timeout = absl::Milliseconds(50);
  // Selected with SELECT on every new connection.
  int db = 0;
  // Namespace: the hash tag of every key ("{ns}:..."). Several stores may
  // share one server under different namespaces.
  std::string ns = "delayq";
  // Sharded namespace: with shards > 1 (at most 256) one namespace is kept
  // under that many hash tags ("{ns}", "{ns#1}", ... "{ns#N-1}"), so on a
  // Redis Cluster its jobs, its work and its memory spread over the
  // primaries that serve those slots; 1 (the default) keeps one hash tag,
  // as before. A job lives on the shard its id picks (CRC16 of the id's
  // "{tag}", else of the whole id, modulo shards), so every call that
  // names a job goes to one shard. What a namespace of several shards
  // gives up (backends/redis/README.md, "Sharded namespaces"):
  //   * Ordering: the ready order (priority, then run_at, then enqueue
  //     order) holds among the jobs of one shard only. Reserve() takes
  //     from the shards that may have ready jobs in turn, so a job may be
  //     handed out before a higher-priority or older one of another shard.
  //     Jobs whose ids share a "{tag}" share a shard, and keep the order.
  //   * Add() of a batch whose ids fall on several shards writes shard by
  //     shard: it checks every id first and, when a later shard still
  //     refuses its part (an id taken meanwhile) or fails, deletes what it
  //     stored on the earlier ones and returns the error. Until then those
  //     jobs were visible: a worker may reserve (even run) one. A batch
  //     whose ids share a "{tag}" is one atomic step, as on one shard.
  //     Scheduler::EnqueueFlow(), all or nothing, refuses a flow whose ids
  //     fall on several shards (InvalidArgument, nothing written), and the
  //     ids it makes for a flow's jobs carry the flow's "{tag}".
  //   * Topic limits are enforced per shard, each shard with its share
  //     (rate / shards, burst and concurrency rounded up), so they are
  //     approximate for the topic as a whole.
  //   * FireSchedule() of an occurrence whose jobs fall on other shards
  //     than 0 stores them after the fire that picks the one process to
  //     enqueue it; if that fails (Unavailable) they are lost, never
  //     enqueued twice.
  //   * News comes from each shard: kReady once per shard whose ready jobs
  //     of a topic went from none to some.
  // Every process must open a namespace with the same shards; Open()
  // refuses a namespace written with another count (FailedPrecondition).
  int shards = 1;
  // What the store counts (see counts.h): on, keeping 24 hours, unless
  // told otherwise. Each process counts as its own options say.
  CountsOptions counts;
  // How many events the store's log keeps (see event_log.h).
  EventLogOptions events;
  // How long establishing a connection may take.
  absl::Duration connect_timeout = absl::Seconds(1);
  // How long a call may wait for all its replies, from when it is written.
  // A call that gets them later returns DeadlineExceeded (whether its change
  // happened is unknown), and since calls share connections and the server
  // answers each connection's calls in order, so does every call queued with
  // it on that connection, which is then replaced by a new one.
  absl::Duration command_timeout = absl::Seconds(2);
  // No longer used (delayed jobs are kept per topic, see
  // backends/redis/README.md); still checked to be in 1..64.
  int delay_buckets = 4;
  // No longer used, and must stay 0: dead jobs stay until they are retried
  // or cancelled, as on every store (Open() refuses another value rather
  // than ignore a cap the caller relies on).
  int dead_cap = 0;
  // Connections kept open at most, opened as needed. Every thread's calls
  // share them: a call takes an idle one, else opens another, else joins
  // the least busy. Calls that meet on one connection reach the server
  // together and leave it in one write, which costs the server less than a
  // connection per thread (bench/README.md).
  int pool_size = 2;
  // The most due jobs of its topic one Reserve() promotes before it
  // reserves (at least 1): it bounds how long one script holds the server.
  // Due jobs beyond it wait for the next calls and PromoteDue().
  int reserve_promote_limit = kReservePromoteLimit;
  // Open() refuses a server whose maxmemory-policy is allkeys-*: when memory
  // runs short such a server deletes any key, and so jobs, which then
  // vanish without a trace. (noeviction refuses the write instead, and
  // volatile-* touches only keys with a TTL, which delayq never sets.) True
  // accepts that risk (the URL's allow_eviction=1).
  bool allow_key_eviction = false;
  // kCaller: times come from the `now` arguments (deterministic tests), and
  // the hosts' clocks must agree within `max_clock_skew`.
  // kServer: scripts read the server's TIME, so the hosts' clocks need not
  // agree; absolute times passed in (run_at, retry_at) are taken relative to
  // the caller's `now`, and every time returned is on the server's clock.
  enum class TimeSource { kCaller, kServer } time_source = TimeSource::kCaller;
  // kCaller only. A call whose `now` is ahead of the server's TIME by more
  // than this (or behind it by more than this plus `command_timeout`) is
  // refused with FailedPrecondition and changes nothing: a host whose clock
  // runs ahead would otherwise fire every host's delayed jobs early and end
  // their leases, one that runs behind would give its own leases less than
  // their ttr, and its delayed jobs would fire early. So `now` must be read
  // for the call (as the Scheduler does), not once for a long run of calls.
  // InfiniteDuration() turns the check off, for a simulated clock (the URL's
  // `max_skew_ms=off`).
  absl::Duration max_clock_skew = absl::Milliseconds(250);
};

// IsUnconfirmedWrite()
//
// Whether `status` says that a call's change was made on the primary but
// fewer than `wait_replicas` replicas confirmed it (see wait_replicas).
bool IsUnconfirmedWrite(const absl::Status& status);

// OpenRedisBackend()
//
// Connects to the server, loads the scripts and returns the store.
// Unavailable if the server cannot be reached, DeadlineExceeded if it does
// not answer in time, PermissionDenied if AUTH is refused, InvalidArgument
// for options out of range (port, db, buckets, caps, pool size, timeouts,
// an empty namespace or one containing braces) and for a db the server does
// not have. FailedPrecondition, changing nothing, for a namespace that holds
// jobs in a data layout this version does not read (written by an earlier
// delayq, or by a newer one), for one written with another `shards`, and
// for a server whose TLS certificate is refused; InvalidArgument naming a TLS
// file that cannot be used.
absl::StatusOr<std::unique_ptr<Backend>> OpenRedisBackend(
    const RedisOptions& options);

// ParseRedisUrl()
//
// Parses
//   redis://[:password@]host:port[/db][?namespace=NS&time=server|caller
//            &max_skew_ms=N|off&buckets=N&timeout_ms=N&pool=N
//            &allow_eviction=0|1]
// or, for a server's Unix socket (`unix_socket`; the db as a parameter),
//   redis+unix://[:password@]/path/to/redis.sock[?db=N&namespace=NS&...]
// or, for the primary that Redis Sentinel names MASTER (`sentinels`,
// `sentinel_master`; the db as a parameter, `sentinel_password` or
// `sentinel_password_file` for sentinels that require one),
//   redis+sentinel://[user:password@]s1:26379,s2:26379/MASTER[?db=N&...]
// Any of them takes wait=N&wait_timeout_ms=N (`wait_replicas`,
// `wait_timeout`) and shards=N (`shards`).
// or, for a Redis Cluster (`cluster_nodes`; db 0 only),
//   redis+cluster://[user:password@]h1:7000,h2:7001[?namespace=NS&...]
// rediss://, rediss+sentinel:// and rediss+cluster:// are the same over TLS
// (`tls`), with
// tls_ca_file=PEM, tls_cert_file=PEM&tls_key_file=PEM (a client
// certificate), tls_server_name=NAME and tls_insecure=1; a tls_* parameter
// in another scheme is an error.
// Credentials may name an ACL user (`username`): user:password@, or
// :password@ for the default user. They run to the last '@' of the URL,
// whatever '/', '?' or '#' they hold, as RedactedUrl() hides them.
// password_file=PATH (any scheme) sets `password` to the first line of that
// file, read here, so that the password shows in no command line: the
// credentials then hold no password (user:@ or none).
// into options (fields not named keep their defaults; `timeout_ms` sets the
// command timeout). The user, password, namespace, master name and socket
// path may be percent-encoded.
// InvalidArgument, naming the offending part (never quoting what could be
// a password: the port, the db, the file's content), for anything else: an
// unreadable password_file, another
// scheme, a missing host or port, a non-numeric or out-of-range number, an
// unknown or repeated query parameter.
absl::StatusOr<RedisOptions> ParseRedisUrl(absl::string_view url);

}  // namespace delayq

#endif  // DELAYQ_REDIS_BACKEND_H_
