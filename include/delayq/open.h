// Copyright delayq authors.
//
// open.h — open any store from a URL.
//
//   memory:                                        a fresh in-memory store
//   sqlite:PATH                                    a SQLite file (created if
//                                                  missing); options as query
//                                                  parameters, e.g.
//                                                  sqlite:jobs.db?sync=full
//   redis://[:password@]host:port[/db][?namespace=NS&...]
//   redis+unix://[:password@]/path/to/redis.sock[?db=N&namespace=NS&...]
//   redis+sentinel://[user:password@]s1:26379,s2:26379/NAME[?db=N&...]
//   redis+cluster://[user:password@]h1:7000,h2:7001[?namespace=NS&...]
//   rediss://..., rediss+sentinel://..., rediss+cluster://...: over TLS
//                                                  (tls_ca_file=,
//                                                  tls_cert_file=, ...)
//   postgres://[user[:password]@]host[:port][/db][?schema=NAME&sslmode=...]
//                                                  a PostgreSQL database
//                                                  (also postgresql://);
//                                                  libpq parameters pass
//                                                  through
//
// Each backend also has a typed factory with an options struct
// (memory_backend.h, sqlite_backend.h, redis_backend.h,
// postgres_backend.h).

#ifndef DELAYQ_OPEN_H_
#define DELAYQ_OPEN_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "delayq/backend.h"
#include "delayq/redacted_url.h"  // IWYU pragma: export

namespace delayq {

// OpenBackend()
//
// Opens the store `url` names. InvalidArgument for a URL of an unknown scheme
// or with malformed parts; otherwise whatever the backend's factory returns
// (Unavailable for a store that cannot be reached, ...).
absl::StatusOr<std::unique_ptr<Backend>> OpenBackend(absl::string_view url);

}  // namespace delayq

#endif  // DELAYQ_OPEN_H_
