// Copyright delayq authors.
//
// ParseRedisUrl(): redis://[user:password@]host:port[/db][?name=value&...],
// redis+unix://[user:password@]/socket/path[?db=N&name=value&...] and
// redis+sentinel://[user:password@]h1:p1,h2:p2/MASTER[?db=N&name=value&...];
// redis+cluster://[user:password@]h1:p1,h2:p2[?name=value&...]; rediss://,
// rediss+sentinel:// and rediss+cluster:// for the same over TLS.

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "backends/redis/backend_impl.h"
#include "delayq/redis_backend.h"
#include "src/common/status_macros.h"
#include "src/common/url_credentials.h"
#include "src/common/url_query.h"

namespace delayq {
namespace {

// The longest password a password_file may hold.
constexpr size_t kMaxPasswordFileLine = 4096;

absl::Status Bad(absl::string_view url, absl::string_view why) {
  return internal::BadUrl("redis", url, why);
}

// Decodes %XX escapes; false on a malformed escape.
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
    out->push_back(static_cast<char>(val(h) * 16 + val(l)));
    i += 2;
  }
  return true;
}

// Takes "user:password" or ":password" (percent-encoded) from a URL's
// userinfo.
absl::Status ParseCredentials(absl::string_view url, absl::string_view userinfo,
                              RedisOptions* o) {
  const size_t colon = userinfo.find(':');
  if (colon == absl::string_view::npos) {
    return Bad(url, "credentials must be 'user:password@' or ':password@'");
  }
  if (!PercentDecode(userinfo.substr(0, colon), &o->username)) {
    return Bad(url, "malformed percent escape in user");
  }
  if (!PercentDecode(userinfo.substr(colon + 1), &o->password)) {
    return Bad(url, "malformed percent escape in password");
  }
  return absl::OkStatus();
}

// The first line of the file at `path` (percent-encoded), a password kept
// out of the command line. Its errors never quote what the file holds.
absl::Status ReadPasswordFile(absl::string_view url, absl::string_view param,
                              absl::string_view path, std::string* password) {
  std::string name;
  if (!PercentDecode(path, &name) || name.empty()) {
    return Bad(url, absl::StrCat("malformed or empty ", param));
  }
  // O_NONBLOCK: a FIFO with no writer is an error, not a hang.
  const int fd = open(name.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    return Bad(url,
               absl::StrCat("cannot open ", param, ": ", std::strerror(errno)));
  }
  // One byte more than a password may have, to tell a long line.
  char buf[kMaxPasswordFileLine + 1];
  size_t got = 0;
  while (got < sizeof(buf)) {
    const ssize_t n = read(fd, buf + got, sizeof(buf) - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      close(fd);
      return Bad(url,
                 absl::StrCat("cannot read ", param, ": ", std::strerror(err)));
    }
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  close(fd);
  absl::string_view text(buf, got);
  const size_t eol = text.find('\n');
  if (eol == absl::string_view::npos && got > kMaxPasswordFileLine) {
    return Bad(url, absl::StrCat(param, "'s first line is longer than ",
                                 kMaxPasswordFileLine, " bytes"));
  }
  text = text.substr(0, eol);
  absl::ConsumeSuffix(&text, "\r");
  if (text.empty())
    return Bad(url, absl::StrCat(param, "'s first line is empty"));
  *password = std::string(text);
  return absl::OkStatus();
}

absl::Status BothSentinelPasswords(absl::string_view url) {
  return Bad(url,
             "give the sentinels' password once, in sentinel_password or in "
             "sentinel_password_file");
}

// "host:port", with an IPv6 host in brackets.
absl::Status ParseHostPort(absl::string_view url, absl::string_view text,
                           RedisEndpoint* e) {
  absl::string_view host, port;
  if (absl::StartsWith(text, "[")) {
    size_t close = text.find(']');
    if (close == absl::string_view::npos) {
      return Bad(url, "unclosed '[' in host");
    }
    host = text.substr(1, close - 1);
    absl::string_view after = text.substr(close + 1);
    if (!absl::ConsumePrefix(&after, ":")) return Bad(url, "missing port");
    port = after;
  } else {
    size_t colon = text.rfind(':');
    if (colon == absl::string_view::npos) return Bad(url, "missing port");
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
  }
  if (host.empty()) return Bad(url, "missing host");
  // Not quoted either: a host with other characters may be a password's
  // part. (RedactedUrl() shows only such hosts.)
  const bool bracketed = absl::StartsWith(text, "[");
  for (char c : host) {
    const bool ok =
        bracketed ? absl::ascii_isxdigit(c) || c == ':' || c == '.'
                  : absl::ascii_isalnum(c) || c == '.' || c == '-' || c == '_';
    if (!ok) return Bad(url, "the host is not a name or an IP address");
  }
  e->host = std::string(host);
  int64_t v = 0;
  // Not quoted: the text after a ':' may be a password that lost its '@'.
  if (!internal::ParseUrlDecimal(port, 1, 65535, &v)) {
    return Bad(url, "the port is not a number in 1..65535");
  }
  e->port = static_cast<int>(v);
  return absl::OkStatus();
}

// The part after "redis://", the credentials and before '?': host:port[/db].
absl::Status ParseTcpTarget(absl::string_view url, absl::string_view rest,
                            RedisOptions* o) {
  absl::string_view path;
  if (size_t slash = rest.find('/'); slash != absl::string_view::npos) {
    path = rest.substr(slash + 1);
    rest = rest.substr(0, slash);
  }
  RedisEndpoint server;
  DQ_RETURN_IF_ERROR(ParseHostPort(url, rest, &server));
  o->host = server.host;
  o->port = server.port;
  int64_t v = 0;

  if (!path.empty()) {
    if (!internal::ParseUrlDecimal(path, 0, std::numeric_limits<int>::max(),
                                   &v)) {
      return Bad(url, "the db after '/' is not a number >= 0");
    }
    o->db = static_cast<int>(v);
  }
  return absl::OkStatus();
}

// The part after "redis+unix://", the credentials and before '?':
// /socket/path.
absl::Status ParseSocketTarget(absl::string_view url, absl::string_view rest,
                               bool had_credentials, RedisOptions* o) {
  if (!had_credentials && absl::StartsWith(rest, ":")) {
    return Bad(url, "a password must end with '@'");
  }
  if (!absl::StartsWith(rest, "/")) {
    return Bad(url, "the socket path must be absolute (redis+unix:///path)");
  }
  // "/user:password" reads as a path when its '@' was forgotten; so that
  // such a password is never shown, a ':' in a path is written %3A.
  if (absl::StrContains(rest, ':')) {
    return Bad(url, "write a ':' in the socket path as %3A");
  }
  if (!PercentDecode(rest, &o->unix_socket)) {
    return Bad(url, "malformed percent escape in the socket path");
  }
  return absl::OkStatus();
}

// "h1:p1,h2:p2,...".
absl::Status ParseHostList(absl::string_view url, absl::string_view text,
                           std::vector<RedisEndpoint>* out) {
  for (absl::string_view one : absl::StrSplit(text, ',')) {
    RedisEndpoint e;
    DQ_RETURN_IF_ERROR(ParseHostPort(url, one, &e));
    out->push_back(std::move(e));
  }
  return absl::OkStatus();
}

// The part after "redis+sentinel://", the credentials and before '?':
// h1:p1,h2:p2/MASTER.
absl::Status ParseSentinelTarget(absl::string_view url, absl::string_view rest,
                                 RedisOptions* o) {
  const size_t slash = rest.find('/');
  if (slash == absl::string_view::npos || slash + 1 == rest.size()) {
    return Bad(url, "missing the primary's name (redis+sentinel://h:p/NAME)");
  }
  if (!PercentDecode(rest.substr(slash + 1), &o->sentinel_master)) {
    return Bad(url, "malformed percent escape in the primary's name");
  }
  return ParseHostList(url, rest.substr(0, slash), &o->sentinels);
}

// The part after "redis+cluster://", the credentials and before '?':
// h1:p1,...
absl::Status ParseClusterTarget(absl::string_view url, absl::string_view rest,
                                RedisOptions* o) {
  if (absl::StrContains(rest, '/')) {
    return Bad(url, "a cluster URL has no path (a cluster has only db 0)");
  }
  return ParseHostList(url, rest, &o->cluster_nodes);
}

// A tls_* parameter, for a rediss:// URL only.
absl::Status ParseTlsParam(absl::string_view url,
                           const internal::UrlParam& param, RedisTls* tls) {
  const absl::string_view name = param.first, value = param.second;
  if (!tls->enabled) {
    return Bad(url, absl::StrCat("'", name,
                                 "' is a TLS setting: the scheme must be "
                                 "rediss:// or rediss+sentinel://"));
  }
  std::string* file = nullptr;
  if (name == "tls_ca_file") file = &tls->ca_file;
  if (name == "tls_cert_file") file = &tls->cert_file;
  if (name == "tls_key_file") file = &tls->key_file;
  if (name == "tls_server_name") file = &tls->server_name;
  if (file != nullptr) {
    if (!PercentDecode(value, file) || file->empty()) {
      return Bad(url, absl::StrCat("malformed or empty ", name));
    }
    return absl::OkStatus();
  }
  if (name == "tls_insecure") {
    if (value != "1" && value != "0") {
      return Bad(url,
                 absl::StrCat("tls_insecure='", value, "' must be 1 or 0"));
    }
    tls->insecure = value == "1";
    return absl::OkStatus();
  }
  return Bad(url, absl::StrCat("unknown parameter '", name, "'"));
}

// The parameters after '?'. `db` is one of them only where the URL has no
// other place for it (a socket, sentinels). password_file=PATH reads the
// password from the first line of a file, so that it shows in no command
// line; sentinel_password_file=PATH does the same for the sentinels'.
absl::Status ParseQuery(absl::string_view url, absl::string_view query,
                        bool db_param, RedisOptions* o) {
  absl::StatusOr<std::vector<internal::UrlParam>> params =
      internal::SplitUrlQuery("redis", url, query);
  if (!params.ok()) return params.status();
  for (const internal::UrlParam& param : *params) {
    const absl::string_view name = param.first, value = param.second;
    auto number = [&](int64_t lo, int64_t hi) {
      return internal::UrlInt("redis", url, param, lo, hi);
    };
    if (name == "db" && db_param) {
      DQ_ASSIGN_OR_RETURN(int64_t v,
                          number(0, std::numeric_limits<int>::max()));
      o->db = static_cast<int>(v);
    } else if (name == "sentinel_password" && !o->sentinels.empty()) {
      if (!o->sentinel_password.empty()) return BothSentinelPasswords(url);
      if (!PercentDecode(value, &o->sentinel_password)) {
        return Bad(url, "malformed percent escape in sentinel_password");
      }
    } else if (name == "sentinel_password_file" && !o->sentinels.empty()) {
      if (!o->sentinel_password.empty()) return BothSentinelPasswords(url);
      DQ_RETURN_IF_ERROR(
          ReadPasswordFile(url, name, value, &o->sentinel_password));
    } else if (name == "password_file") {
      if (!o->password.empty()) {
        return Bad(url,
                   "give the password in the URL or in password_file, not "
                   "both");
      }
      DQ_RETURN_IF_ERROR(ReadPasswordFile(url, name, value, &o->password));
    } else if (name == "namespace") {
      if (!PercentDecode(value, &o->ns)) {
        return Bad(url, "malformed percent escape in namespace");
      }
      if (o->ns.find_first_of("{}") != std::string::npos) {
        return Bad(url, "namespace may not contain braces");
      }
    } else if (name == "time") {
      if (value == "server") {
        o->time_source = RedisOptions::TimeSource::kServer;
      } else if (value == "caller") {
        o->time_source = RedisOptions::TimeSource::kCaller;
      } else {
        return Bad(url, absl::StrCat("time='", value,
                                     "' must be 'server' or 'caller'"));
      }
    } else if (name == "max_skew_ms") {
      if (value == "off") {
        o->max_clock_skew = absl::InfiniteDuration();
      } else {
        DQ_ASSIGN_OR_RETURN(int64_t v, number(0, 3600 * 1000));
        o->max_clock_skew = absl::Milliseconds(v);
      }
    } else if (name == "buckets") {
      DQ_ASSIGN_OR_RETURN(int64_t v, number(1, 64));
      o->delay_buckets = static_cast<int>(v);
    } else if (name == "dead_cap") {
      return Bad(url, kNoDeadCap);
    } else if (name == "wait") {
      DQ_ASSIGN_OR_RETURN(int64_t v, number(0, 64));
      o->wait_replicas = static_cast<int>(v);
    } else if (name == "wait_timeout_ms") {
      DQ_ASSIGN_OR_RETURN(int64_t v, number(1, 3600 * 1000));
      o->wait_timeout = absl::Milliseconds(v);
    } else if (name == "timeout_ms") {
      DQ_ASSIGN_OR_RETURN(int64_t v, number(1, 3600 * 1000));
      o->command_timeout = absl::Milliseconds(v);
    } else if (name == "shards") {
      DQ_ASSIGN_OR_RETURN(int64_t v, number(1, 256));
      o->shards = static_cast<int>(v);
    } else if (name == "pool") {
      DQ_ASSIGN_OR_RETURN(int64_t v, number(1, 1024));
      o->pool_size = static_cast<int>(v);
    } else if (absl::StartsWith(name, "tls_")) {
      DQ_RETURN_IF_ERROR(ParseTlsParam(url, param, &o->tls));
    } else if (name == "allow_eviction") {
      if (value != "1" && value != "0") {
        return Bad(url,
                   absl::StrCat("allow_eviction='", value, "' must be 1 or 0"));
      }
      o->allow_key_eviction = value == "1";
    } else {
      DQ_ASSIGN_OR_RETURN(bool counted,
                          internal::ApplyStoreParam("redis", url, param,
                                                    &o->counts, &o->events));
      if (!counted) {
        return Bad(url, absl::StrCat("unknown parameter '", name, "'"));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<RedisOptions> ParseRedisUrl(absl::string_view url) {
  enum class Kind { kTcp, kSocket, kSentinel, kCluster };
  struct Scheme {
    absl::string_view prefix;
    Kind kind;
    bool tls;
  };
  static constexpr Scheme kSchemes[] = {
      {"redis://", Kind::kTcp, false},
      {"rediss://", Kind::kTcp, true},
      {"redis+unix://", Kind::kSocket, false},
      {"redis+sentinel://", Kind::kSentinel, false},
      {"rediss+sentinel://", Kind::kSentinel, true},
      {"redis+cluster://", Kind::kCluster, false},
      {"rediss+cluster://", Kind::kCluster, true},
  };
  absl::string_view rest = url;
  const Scheme* scheme = nullptr;
  for (const Scheme& s : kSchemes) {
    if (absl::ConsumePrefix(&rest, s.prefix)) {
      scheme = &s;
      break;
    }
  }
  if (scheme == nullptr) {
    return Bad(url,
               "scheme must be redis://, rediss://, redis+unix://, "
               "redis+sentinel://, rediss+sentinel://, redis+cluster:// or "
               "rediss+cluster://");
  }
  RedisOptions o;
  o.tls.enabled = scheme->tls;
  // The credentials run from the scheme to the last '@', as RedactedUrl()
  // hides them.
  const size_t at = rest.rfind('@');
  const bool had_credentials = at != absl::string_view::npos;
  if (had_credentials) {
    // Refused whole, and its error quotes none of it: either reading
    // could put a password's text where an error quotes it.
    if (internal::CredentialsHoldQuery(rest.substr(0, at))) {
      return Bad(url,
                 "a '?' or '#' before the last '@': write them (and any '@' "
                 "of a password or query value) percent-encoded: %3F, %23, "
                 "%40");
    }
    DQ_RETURN_IF_ERROR(ParseCredentials(url, rest.substr(0, at), &o));
    rest.remove_prefix(at + 1);
  }
  const size_t q = rest.find('?');
  const absl::string_view target = rest.substr(0, q);
  const absl::string_view query =
      q == absl::string_view::npos ? "" : rest.substr(q + 1);
  // `db` is a parameter only where the URL has no other place for it.
  bool db_param = false;
  switch (scheme->kind) {
    case Kind::kTcp:
      DQ_RETURN_IF_ERROR(ParseTcpTarget(url, target, &o));
      break;
    case Kind::kSocket:
      DQ_RETURN_IF_ERROR(ParseSocketTarget(url, target, had_credentials, &o));
      db_param = true;
      break;
    case Kind::kSentinel:
      DQ_RETURN_IF_ERROR(ParseSentinelTarget(url, target, &o));
      db_param = true;
      break;
    case Kind::kCluster:
      DQ_RETURN_IF_ERROR(ParseClusterTarget(url, target, &o));
      break;
  }
  DQ_RETURN_IF_ERROR(ParseQuery(url, query, db_param, &o));
  if (had_credentials && o.password.empty()) {
    return Bad(url, "a user needs a password (in the URL or password_file)");
  }
  return o;
}

}  // namespace delayq
