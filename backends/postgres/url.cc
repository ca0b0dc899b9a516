// Copyright delayq authors.
//
// ParsePostgresUrl():
// postgres://[user[:password]@][host[:port],...][/dbname][?name=value&...],
// also postgresql://.

#include <postgresql/libpq-fe.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "backends/postgres/internal/schema.h"
#include "delayq/postgres_backend.h"
#include "delayq/redacted_url.h"
#include "src/common/status_macros.h"
#include "src/common/url_credentials.h"
#include "src/common/url_query.h"

namespace delayq {
namespace {

absl::Status Bad(absl::string_view url, absl::string_view why) {
  return internal::BadUrl("postgres", url, why);
}

// Decodes %XX escapes; false on a malformed escape, and on %00: libpq
// takes its settings as C strings, so a NUL would cut a password, a
// database name or an sslmode short without a word.
bool PercentDecode(absl::string_view in, std::string* out) {
  out->clear();
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%') {
      out->push_back(in[i]);
      continue;
    }
    if (i + 2 >= in.size()) return false;
    const char h = in[i + 1], l = in[i + 2];
    if (!absl::ascii_isxdigit(h) || !absl::ascii_isxdigit(l)) return false;
    auto val = [](char c) {
      return absl::ascii_isdigit(c) ? c - '0'
                                    : absl::ascii_tolower(c) - 'a' + 10;
    };
    const char c = static_cast<char>(val(h) * 16 + val(l));
    if (c == '\0') return false;
    out->push_back(c);
    i += 2;
  }
  return true;
}

// Whether libpq takes `keyword` as a connection parameter.
bool LibpqKnows(absl::string_view keyword) {
  PQconninfoOption* options = PQconndefaults();
  if (options == nullptr) return false;
  bool known = false;
  for (PQconninfoOption* o = options; o->keyword != nullptr; ++o) {
    if (keyword == o->keyword) known = true;
  }
  PQconninfoFree(options);
  return known;
}

// "user[:password]" into the user and password parameters.
absl::Status ParseCredentials(absl::string_view url, absl::string_view text,
                              PostgresOptions* options) {
  const size_t colon = text.find(':');
  std::string user, password;
  if (!PercentDecode(text.substr(0, colon), &user) ||
      (colon != absl::string_view::npos &&
       !PercentDecode(text.substr(colon + 1), &password))) {
    return Bad(url, "malformed %-escape in the credentials");
  }
  if (!user.empty()) options->params.emplace_back("user", user);
  if (colon != absl::string_view::npos) {
    options->params.emplace_back("password", password);
  }
  return absl::OkStatus();
}

// "host[:port],..." into the host and port parameters (lists, as libpq
// takes them for several hosts). A host may be a bracketed IPv6 address,
// or a percent-encoded socket folder.
absl::Status ParseHosts(absl::string_view url, absl::string_view text,
                        PostgresOptions* options) {
  if (text.empty()) return absl::OkStatus();
  std::vector<std::string> hosts, ports;
  bool any_port = false;
  for (absl::string_view one : absl::StrSplit(text, ',')) {
    absl::string_view host = one, port;
    const size_t close = one.rfind(']');
    const size_t colon = one.rfind(':');
    const bool bracketed = absl::StartsWith(one, "[");
    if (colon != absl::string_view::npos &&
        (!bracketed || (close != absl::string_view::npos && colon > close))) {
      host = one.substr(0, colon);
      port = one.substr(colon + 1);
      int64_t n = 0;
      // The text is not quoted: in a URL whose credentials lost their '@'
      // it is the password.
      if (!internal::ParseUrlDecimal(port, 1, 65535, &n)) {
        return Bad(url, "a port must be a number from 1 to 65535");
      }
      any_port = true;
    }
    if (absl::StartsWith(host, "[") && absl::EndsWith(host, "]")) {
      host = host.substr(1, host.size() - 2);
    }
    std::string decoded;
    if (host.empty() || !PercentDecode(host, &decoded)) {
      return Bad(url, "empty host, or a malformed %-escape in one");
    }
    hosts.push_back(decoded);
    ports.push_back(port.empty() ? "5432" : std::string(port));
  }
  options->params.emplace_back("host", absl::StrJoin(hosts, ","));
  if (any_port) options->params.emplace_back("port", absl::StrJoin(ports, ","));
  return absl::OkStatus();
}

// One query parameter: delayq's own, or libpq's.
absl::Status ApplyParam(absl::string_view url, const internal::UrlParam& param,
                        PostgresOptions* options) {
  const absl::string_view key = param.first;
  if (key == "schema") {
    if (!postgres_internal::ValidSchemaName(param.second)) {
      return Bad(url,
                 "schema must be 1 to 63 letters, digits or '_', not "
                 "starting with a digit");
    }
    options->schema = std::string(param.second);
    return absl::OkStatus();
  }
  if (key == "timeout_ms") {
    DQ_ASSIGN_OR_RETURN(
        int64_t ms, internal::UrlInt("postgres", url, param, 1000, INT32_MAX));
    options->timeout = absl::Milliseconds(ms);
    return absl::OkStatus();
  }
  if (key == "answer_timeout_ms") {
    DQ_ASSIGN_OR_RETURN(
        int64_t ms, internal::UrlInt("postgres", url, param, 1000, INT32_MAX));
    options->answer_timeout = absl::Milliseconds(ms);
    return absl::OkStatus();
  }
  if (key == "max_idle_connections") {
    DQ_ASSIGN_OR_RETURN(int64_t n,
                        internal::UrlInt("postgres", url, param, 1, 1000));
    options->max_idle_connections = static_cast<int>(n);
    return absl::OkStatus();
  }
  DQ_ASSIGN_OR_RETURN(bool counted, internal::ApplyStoreParam(
                                        "postgres", url, param,
                                        &options->counts, &options->events));
  if (counted) return absl::OkStatus();
  if (!LibpqKnows(key)) {
    return Bad(url, absl::StrCat("unknown parameter '", key,
                                 "' (delayq's: schema, timeout_ms, "
                                 "answer_timeout_ms, max_idle_connections, ",
                                 internal::kStoreParams,
                                 "; any other must be a libpq connection "
                                 "parameter)"));
  }
  // A host, port, database, user or password the URL names before its
  // '?' as well: libpq would take one, and errors would name the other.
  for (const auto& [given, unused] : options->params) {
    if (given == key) {
      return Bad(url, absl::StrCat("'", key,
                                   "' is given both before the '?' and as a "
                                   "parameter; give it once"));
    }
  }
  std::string value;
  if (!PercentDecode(param.second, &value)) {
    return Bad(url,
               absl::StrCat("malformed %-escape in parameter '", key, "'"));
  }
  options->params.emplace_back(std::string(key), value);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<PostgresOptions> ParsePostgresUrl(absl::string_view url) {
  absl::string_view rest = url;
  if (!absl::ConsumePrefix(&rest, "postgres://") &&
      !absl::ConsumePrefix(&rest, "postgresql://")) {
    return Bad(url, "does not start with 'postgres://' or 'postgresql://'");
  }
  // A URL whose every part after the scheme RedactedUrl() hides may hold a
  // password anywhere (one that lost its '@', say): refused, quoting none
  // of it.
  if (absl::EndsWith(RedactedUrl(url), "://***")) {
    return Bad(url,
               "cannot tell its credentials from its hosts: write "
               "user:password@host:port, hosts as names or [IPv6], a "
               "socket folder as ?host=/path, and '?', '#', '@' inside a "
               "password percent-encoded");
  }
  PostgresOptions options;
  // As RedactedUrl() reads it: the credentials run to the last '@'.
  const size_t at = rest.rfind('@');
  if (at != absl::string_view::npos) {
    const absl::string_view credentials = rest.substr(0, at);
    if (internal::CredentialsHoldQuery(credentials)) {
      return Bad(url, "credentials hold '?' or '#'; percent-encode them");
    }
    DQ_RETURN_IF_ERROR(ParseCredentials(url, credentials, &options));
    rest = rest.substr(at + 1);
  }
  absl::string_view query;
  const size_t question = rest.find('?');
  if (question != absl::string_view::npos) {
    query = rest.substr(question + 1);
    if (query.empty()) return Bad(url, "empty query after '?'");
    rest = rest.substr(0, question);
  }
  const size_t slash = rest.find('/');
  DQ_RETURN_IF_ERROR(ParseHosts(url, rest.substr(0, slash), &options));
  if (slash != absl::string_view::npos && slash + 1 < rest.size()) {
    std::string dbname;
    if (!PercentDecode(rest.substr(slash + 1), &dbname)) {
      return Bad(url, "malformed %-escape in the database name");
    }
    options.params.emplace_back("dbname", dbname);
  }
  DQ_ASSIGN_OR_RETURN(std::vector<internal::UrlParam> params,
                      internal::SplitUrlQuery("postgres", url, query));
  for (const internal::UrlParam& param : params) {
    DQ_RETURN_IF_ERROR(ApplyParam(url, param, &options));
  }
  return options;
}

}  // namespace delayq
