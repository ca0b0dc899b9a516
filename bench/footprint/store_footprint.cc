// Copyright delayq authors.
//
// Bytes per pending delayed job in the persistent stores: N jobs of topic
// "npc.respawn" with payload {"npc":12345} and generated ids, enqueued with
// Scheduler::EnqueueBatch() in batches whose delays are spread uniformly
// over an hour.
//
//   bazel run -c opt //bench:redis_footprint -- --n=100000
//   bazel run -c opt //bench:redis_footprint -- --n=100000 --store=sqlite
//   bazel run -c opt //bench:redis_footprint -- --n=100000 --store=postgres
//       --postgres=postgres://postgres@127.0.0.1:5432/postgres?schema=fp
//
// Redis: starts a private redis-server (default settings, no persistence)
// on a free loopback port in a temporary directory, and prints the growth
// of `used_memory` (INFO memory) per job, the keys per job, and a breakdown
// by key kind (MEMORY USAGE, OBJECT ENCODING, elements). SQLite: the file
// and its WAL after a checkpoint, per job. PostgreSQL (a server of the
// caller's, --postgres): pg_total_relation_size() of every table of the
// store's schema (tables, indexes, TOAST) per job; the schema should be new.
// All: the enqueue rate. The producer is this one process.

#include <hiredis/hiredis.h>
#include <postgresql/libpq-fe.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "delayq/delayq.h"
#include "delayq/postgres_backend.h"
#include "tests/testing/redis_server.h"
#include "tests/testing/temp_path.h"

ABSL_FLAG(int64_t, n, 100'000, "pending delayed jobs");
ABSL_FLAG(int, batch, 100, "jobs per EnqueueBatch() call (one delay each)");
ABSL_FLAG(std::string, store, "redis", "redis, sqlite or postgres");
ABSL_FLAG(std::string, postgres, "",
          "postgres: the store's URL, postgres://...?schema=NEW_SCHEMA");
ABSL_FLAG(bool, json, false,
          "print one JSON line (bench/run_all.sh's format) instead of text");
ABSL_FLAG(int, samples, 1000,
          "keys of each kind measured with MEMORY USAGE (the rest scaled)");

namespace delayq {
namespace {

constexpr char kTopic[] = "npc.respawn";
constexpr char kPayload[] = "{\"npc\":12345}";
constexpr char kNamespace[] = "delayq";
const absl::Duration kSpread = absl::Hours(1);

[[noreturn]] void Die(const std::string& what) {
  fprintf(stderr, "redis_footprint: %s\n", what.c_str());
  exit(1);
}

void Check(const absl::Status& s, const char* what) {
  if (!s.ok()) Die(absl::StrCat(what, ": ", s.ToString()));
}

// Enqueues N jobs in batches, each batch with its own delay uniform over the
// spread; returns the jobs per second.
double EnqueueAll(Scheduler& scheduler, int64_t n, int batch) {
  std::mt19937_64 gen(42);
  std::uniform_int_distribution<int64_t> us(1,
                                            absl::ToInt64Microseconds(kSpread));
  const absl::Time start = absl::Now();
  for (int64_t done = 0; done < n;) {
    const int64_t size = std::min<int64_t>(batch, n - done);
    std::vector<std::string> payloads(size, kPayload);
    JobOptions options;
    options.delay = absl::Microseconds(us(gen));
    Check(scheduler.EnqueueBatch(kTopic, payloads, options).status(),
          "EnqueueBatch");
    done += size;
  }
  return static_cast<double>(n) / absl::ToDoubleSeconds(absl::Now() - start);
}

// A synchronous hiredis connection for the measurements.
class Probe {
 public:
  explicit Probe(int port) : c_(redisConnect("127.0.0.1", port)) {
    if (c_ == nullptr || c_->err != 0) Die("cannot connect to redis-server");
  }
  ~Probe() { redisFree(c_); }

  // The reply to a command given as separate arguments.
  redisReply* Run(const std::vector<std::string>& args) {
    std::vector<const char*> argv;
    std::vector<size_t> lens;
    for (const std::string& a : args) {
      argv.push_back(a.data());
      lens.push_back(a.size());
    }
    auto* r = static_cast<redisReply*>(redisCommandArgv(
        c_, static_cast<int>(args.size()), argv.data(), lens.data()));
    if (r == nullptr) Die(absl::StrCat(args[0], ": no reply"));
    if (r->type == REDIS_REPLY_ERROR) Die(absl::StrCat(args[0], ": ", r->str));
    return r;
  }
  int64_t Int(const std::vector<std::string>& args) {
    redisReply* r = Run(args);
    const int64_t v = r->integer;
    freeReplyObject(r);
    return v;
  }
  std::string Str(const std::vector<std::string>& args) {
    redisReply* r = Run(args);
    std::string v = r->str != nullptr ? std::string(r->str, r->len) : "";
    freeReplyObject(r);
    return v;
  }
  int64_t UsedMemory() {
    for (absl::string_view line :
         absl::StrSplit(Str({"INFO", "memory"}), '\n')) {
      int64_t v = 0;
      if (absl::ConsumePrefix(&line, "used_memory:") &&
          absl::SimpleAtoi(absl::StripTrailingAsciiWhitespace(line), &v)) {
        return v;
      }
    }
    Die("INFO memory has no used_memory");
  }
  std::string Config(const std::string& name) {
    redisReply* r = Run({"CONFIG", "GET", name});
    std::string v = r->elements == 2
                        ? std::string(r->element[1]->str, r->element[1]->len)
                        : "?";
    freeReplyObject(r);
    return v;
  }
  std::vector<std::string> Keys(const std::string& pattern) {
    std::vector<std::string> out;
    std::string cursor = "0";
    do {
      redisReply* r = Run({"SCAN", cursor, "MATCH", pattern, "COUNT", "1000"});
      cursor = std::string(r->element[0]->str, r->element[0]->len);
      const redisReply* keys = r->element[1];
      for (size_t i = 0; i < keys->elements; ++i) {
        out.emplace_back(keys->element[i]->str, keys->element[i]->len);
      }
      freeReplyObject(r);
    } while (cursor != "0");
    return out;
  }

 private:
  redisContext* c_;
};

// "{ns}:kind:rest" -> "kind:*"; "{ns}:name" -> "name".
std::string KindOf(const std::string& key, size_t prefix) {
  const std::string rest = key.substr(prefix);
  const size_t colon = rest.find(':');
  return colon == std::string::npos ? rest : rest.substr(0, colon) + ":*";
}

// The figures as one line of bench/run_all.sh's results.
void PrintJson(const char* system, int64_t n, int batch, double bytes_per_job,
               double rate) {
  printf(
      "{\"system\": \"%s\", \"workload\": \"footprint\", \"params\": "
      "{\"shape\": \"one-process\", \"n\": %lld, \"batch\": %d}, "
      "\"metrics\": {\"bytes_per_job\": %.1f, \"enqueue_jobs_per_s\": "
      "%.0f}}\n",
      system, static_cast<long long>(n), batch, bytes_per_job, rate);
}

int64_t Elements(Probe& probe, const std::string& type,
                 const std::string& key) {
  if (type == "zset") return probe.Int({"ZCARD", key});
  if (type == "hash") return probe.Int({"HLEN", key});
  if (type == "set") return probe.Int({"SCARD", key});
  if (type == "list") return probe.Int({"LLEN", key});
  return 1;
}

int RunRedis(int64_t n, int batch) {
  absl::StatusOr<std::unique_ptr<testing::RedisServer>> server =
      testing::RedisServer::Start();
  Check(server.status(), "redis-server");
  Probe probe((*server)->port());
  RedisOptions options;
  options.port = (*server)->port();
  options.ns = kNamespace;
  absl::StatusOr<std::unique_ptr<Backend>> backend = OpenRedisBackend(options);
  Check(backend.status(), "open");
  absl::StatusOr<std::unique_ptr<Scheduler>> scheduler =
      Scheduler::Create(std::move(*backend));
  Check(scheduler.status(), "scheduler");

  const int64_t keys_before = probe.Int({"DBSIZE"});
  const int64_t before = probe.UsedMemory();
  const double rate = EnqueueAll(**scheduler, n, batch);
  const int64_t after = probe.UsedMemory();
  const int64_t keys_after = probe.Int({"DBSIZE"});

  std::string version = "?";
  for (absl::string_view line :
       absl::StrSplit(probe.Str({"INFO", "server"}), '\n')) {
    if (absl::ConsumePrefix(&line, "redis_version:")) {
      version = std::string(absl::StripTrailingAsciiWhitespace(line));
    }
  }
  if (absl::GetFlag(FLAGS_json)) {
    PrintJson("delayq-redis", n, batch, static_cast<double>(after - before) / n,
              rate);
    scheduler->reset();
    return 0;
  }
  printf("redis-server %s with its default settings:", version.c_str());
  for (const char* name :
       {"hash-max-listpack-entries", "hash-max-listpack-value",
        "zset-max-listpack-entries", "zset-max-listpack-value"}) {
    printf(" %s %s", name, probe.Config(name).c_str());
  }
  printf("\n");
  printf(
      "%lld delayed jobs, topic %s, payload %s, generated ids, "
      "EnqueueBatch of %d, delays uniform over 1 h; producer: this one "
      "process\n",
      static_cast<long long>(n), kTopic, kPayload, batch);
  printf("used_memory growth: %lld bytes, %.1f bytes/job\n",
         static_cast<long long>(after - before),
         static_cast<double>(after - before) / n);
  printf("keys: %lld new, %.3f per job\n",
         static_cast<long long>(keys_after - keys_before),
         static_cast<double>(keys_after - keys_before) / n);
  printf("enqueue: %.0f jobs/s\n\n", rate);

  // The breakdown: every key of the namespace, by kind.
  const std::string prefix = absl::StrCat("{", kNamespace, "}:");
  struct Kind {
    std::vector<std::string> keys;
  };
  std::map<std::string, Kind> kinds;
  for (std::string& key : probe.Keys(prefix + "*")) {
    kinds[KindOf(key, prefix.size())].keys.push_back(std::move(key));
  }
  printf("%-14s %8s %-10s %-9s %10s %14s %10s\n", "key kind", "keys", "type",
         "encoding", "elements", "MEMORY USAGE", "bytes/job");
  const int samples = absl::GetFlag(FLAGS_samples);
  double total = 0;
  for (const auto& [name, kind] : kinds) {
    const size_t measured = std::min<size_t>(kind.keys.size(), samples);
    double bytes = 0;
    int64_t elements = 0;
    std::map<std::string, int> encodings;
    std::string type;
    for (size_t i = 0; i < measured; ++i) {
      const std::string& key = kind.keys[i];
      type = probe.Str({"TYPE", key});
      bytes += probe.Int({"MEMORY", "USAGE", key, "SAMPLES", "0"});
      elements += Elements(probe, type, key);
      ++encodings[probe.Str({"OBJECT", "ENCODING", key})];
    }
    const double scale = static_cast<double>(kind.keys.size()) / measured;
    bytes *= scale;
    total += bytes;
    std::string encoding;
    for (const auto& [e, count] : encodings) {
      absl::StrAppend(&encoding, encoding.empty() ? "" : ",", e);
    }
    printf("%-14s %8zu %-10s %-9s %10.0f %14.0f %10.1f\n", name.c_str(),
           kind.keys.size(), type.c_str(), encoding.c_str(), elements * scale,
           bytes, bytes / n);
  }
  printf("%-14s %8s %-10s %-9s %10s %14.0f %10.1f\n", "all", "", "", "", "",
         total, total / n);
  printf(
      "\n(MEMORY USAGE counts each key's own allocations; used_memory also "
      "counts the keyspace's hash table.)\n");
  scheduler->reset();
  return 0;
}

void PrintSqliteText(int64_t n, int batch, int64_t file, int64_t wal,
                     double rate) {
  printf(
      "%lld delayed jobs, topic %s, payload %s, generated ids, "
      "EnqueueBatch of %d, delays uniform over 1 h; producer: this one "
      "process\n",
      static_cast<long long>(n), kTopic, kPayload, batch);
  printf("sqlite file %lld + wal %lld bytes after checkpoint: %.1f bytes/job\n",
         static_cast<long long>(file), static_cast<long long>(wal),
         static_cast<double>(file + wal) / n);
  printf("enqueue: %.0f jobs/s\n", rate);
}

int64_t FileSize(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 ? st.st_size : 0;
}

int RunSqlite(int64_t n, int batch) {
  const std::string dir = testing::MakeTempDir("delayq-footprint");
  if (dir.empty()) Die("mkdir");
  const std::string path = absl::StrCat(dir, "/footprint.db");
  double rate = 0;
  {
    absl::StatusOr<std::unique_ptr<Backend>> backend =
        OpenBackend(absl::StrCat("sqlite:", path));
    Check(backend.status(), "open");
    absl::StatusOr<std::unique_ptr<Scheduler>> scheduler =
        Scheduler::Create(std::move(*backend));
    Check(scheduler.status(), "scheduler");
    rate = EnqueueAll(**scheduler, n, batch);
  }
  sqlite3* db = nullptr;
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK ||
      sqlite3_exec(db, "PRAGMA wal_checkpoint(TRUNCATE)", nullptr, nullptr,
                   nullptr) != SQLITE_OK) {
    Die(absl::StrCat("checkpoint: ", sqlite3_errmsg(db)));
  }
  const int64_t file = FileSize(path);
  const int64_t wal = FileSize(path + "-wal");
  sqlite3_close(db);
  if (absl::GetFlag(FLAGS_json)) {
    PrintJson("delayq-sqlite", n, batch, static_cast<double>(file + wal) / n,
              rate);
  } else {
    PrintSqliteText(n, batch, file, wal, rate);
  }
  for (const char* suffix : {"", "-wal", "-shm"}) {
    unlink((path + suffix).c_str());
  }
  rmdir(dir.c_str());
  return 0;
}

// The bytes of every table of `schema` with its indexes and TOAST.
int64_t SchemaBytes(const std::string& url, const std::string& schema) {
  const std::string conninfo = url.substr(0, url.find('?'));
  std::unique_ptr<PGconn, void (*)(PGconn*)> conn(PQconnectdb(conninfo.c_str()),
                                                  &PQfinish);
  if (PQstatus(conn.get()) != CONNECTION_OK) Die(PQerrorMessage(conn.get()));
  const char* params[] = {schema.c_str()};
  std::unique_ptr<PGresult, void (*)(PGresult*)> r(
      PQexecParams(conn.get(),
                   "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) "
                   "FROM pg_class c JOIN pg_namespace s ON s.oid = "
                   "c.relnamespace WHERE s.nspname = $1 AND c.relkind = 'r'",
                   1, nullptr, params, nullptr, nullptr, 0),
      &PQclear);
  if (PQresultStatus(r.get()) != PGRES_TUPLES_OK) {
    Die(PQerrorMessage(conn.get()));
  }
  int64_t bytes = 0;
  (void)absl::SimpleAtoi(PQgetvalue(r.get(), 0, 0), &bytes);
  return bytes;
}

int RunPostgres(int64_t n, int batch) {
  const std::string url = absl::GetFlag(FLAGS_postgres);
  absl::StatusOr<PostgresOptions> options = ParsePostgresUrl(url);
  Check(options.status(), "--postgres");
  double rate = 0;
  {
    absl::StatusOr<std::unique_ptr<Backend>> backend = OpenBackend(url);
    Check(backend.status(), "open");
    absl::StatusOr<std::unique_ptr<Scheduler>> scheduler =
        Scheduler::Create(std::move(*backend));
    Check(scheduler.status(), "scheduler");
    rate = EnqueueAll(**scheduler, n, batch);
  }
  const int64_t bytes = SchemaBytes(url, options->schema);
  if (absl::GetFlag(FLAGS_json)) {
    PrintJson("delayq-postgres", n, batch, static_cast<double>(bytes) / n,
              rate);
  } else {
    printf(
        "%lld delayed jobs, topic %s, payload %s, EnqueueBatch of %d, "
        "delays uniform over 1 h; producer: this one process\n"
        "schema %s: %lld bytes (tables, indexes, TOAST): %.1f bytes/job\n"
        "enqueue: %.0f jobs/s\n",
        static_cast<long long>(n), kTopic, kPayload, batch,
        options->schema.c_str(), static_cast<long long>(bytes),
        static_cast<double>(bytes) / n, rate);
  }
  return 0;
}

}  // namespace
}  // namespace delayq

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const int64_t n = absl::GetFlag(FLAGS_n);
  const int batch = absl::GetFlag(FLAGS_batch);
  if (n < 1 || batch < 1) {
    fprintf(stderr, "--n and --batch must be >= 1\n");
    return 2;
  }
  const std::string store = absl::GetFlag(FLAGS_store);
  if (store == "redis") return delayq::RunRedis(n, batch);
  if (store == "sqlite") return delayq::RunSqlite(n, batch);
  if (store == "postgres") return delayq::RunPostgres(n, batch);
  fprintf(stderr, "--store must be redis, sqlite or postgres\n");
  return 2;
}
