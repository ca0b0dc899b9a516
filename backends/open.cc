// Copyright delayq authors.

#include "delayq/open.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "delayq/memory_backend.h"
#include "delayq/postgres_backend.h"
#include "delayq/redis_backend.h"
#include "delayq/sqlite_backend.h"

namespace delayq {

absl::StatusOr<std::unique_ptr<Backend>> OpenBackend(absl::string_view url) {
  if (url == "memory:" || url == "memory") return NewMemoryBackend();
  if (absl::StartsWith(url, "sqlite:")) {
    absl::StatusOr<SqliteOptions> options = ParseSqliteUrl(url);
    if (!options.ok()) return options.status();
    return OpenSqliteBackend(*options);
  }
  // redis://, rediss://, redis+unix://, redis+sentinel://, ...
  if (absl::StartsWith(url, "redis:") || absl::StartsWith(url, "redis+") ||
      absl::StartsWith(url, "rediss:") || absl::StartsWith(url, "rediss+")) {
    absl::StatusOr<RedisOptions> options = ParseRedisUrl(url);
    if (!options.ok()) return options.status();
    return OpenRedisBackend(*options);
  }
  if (absl::StartsWith(url, "postgres:") ||
      absl::StartsWith(url, "postgresql:")) {
    absl::StatusOr<PostgresOptions> options = ParsePostgresUrl(url);
    if (!options.ok()) return options.status();
    return OpenPostgresBackend(*options);
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown store URL \"", RedactedUrl(url),
                   "\"; expected memory:, sqlite:PATH, redis://HOST:PORT, ",
                   "rediss://HOST:PORT, redis+unix:///SOCKET, ",
                   "redis+sentinel://HOST:PORT,.../NAME, ",
                   "redis+cluster://HOST:PORT,... or ",
                   "postgres://USER:PASSWORD@HOST:PORT/DB"));
}

}  // namespace delayq
