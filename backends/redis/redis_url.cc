// Copyright delayq authors.
//
// ParseRedisUrl(): redis://[:password@]host:port[/db][?name=value&...] and
// redis+unix://[:password@]/socket/path[?db=N&name=value&...].

#include <limits>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "backends/redis/internal/backend_impl.h"
#include "delayq/redis_backend.h"
#include "src/status_macros.h"
#include "src/url_query.h"

namespace delayq {
namespace {

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

// Takes ":password" (percent-encoded) from a URL's userinfo.
absl::Status ParsePassword(absl::string_view url, absl::string_view userinfo,
                           RedisOptions* o) {
  if (!absl::ConsumePrefix(&userinfo, ":")) {
    return Bad(url, "credentials must be ':password@' (no user name)");
  }
  if (!PercentDecode(userinfo, &o->password)) {
    return Bad(url, "malformed percent escape in password");
  }
  return absl::OkStatus();
}

// The part after "redis://" and before '?': [:password@]host:port[/db].
absl::Status ParseTcpTarget(absl::string_view url, absl::string_view rest,
                            RedisOptions* o) {
  absl::string_view path;
  if (size_t slash = rest.find('/'); slash != absl::string_view::npos) {
    path = rest.substr(slash + 1);
    rest = rest.substr(0, slash);
  }
  if (size_t at = rest.rfind('@'); at != absl::string_view::npos) {
    if (absl::Status s = ParsePassword(url, rest.substr(0, at), o); !s.ok()) {
      return s;
    }
    rest = rest.substr(at + 1);
  }

  // host:port, with an IPv6 host in brackets.
  absl::string_view host, port;
  if (absl::StartsWith(rest, "[")) {
    size_t close = rest.find(']');
    if (close == absl::string_view::npos)
      return Bad(url, "unclosed '[' in host");
    host = rest.substr(1, close - 1);
    absl::string_view after = rest.substr(close + 1);
    if (!absl::ConsumePrefix(&after, ":")) return Bad(url, "missing port");
    port = after;
  } else {
    size_t colon = rest.rfind(':');
    if (colon == absl::string_view::npos) return Bad(url, "missing port");
    host = rest.substr(0, colon);
    port = rest.substr(colon + 1);
  }
  if (host.empty()) return Bad(url, "missing host");
  o->host = std::string(host);
  int64_t v = 0;
  if (!internal::ParseUrlDecimal(port, 1, 65535, &v)) {
    return Bad(url, absl::StrCat("port '", port, "' is not in 1..65535"));
  }
  o->port = static_cast<int>(v);

  if (!path.empty()) {
    if (!internal::ParseUrlDecimal(path, 0, std::numeric_limits<int>::max(),
                                   &v)) {
      return Bad(url, absl::StrCat("db '", path, "' is not a number >= 0"));
    }
    o->db = static_cast<int>(v);
  }
  return absl::OkStatus();
}

// The part after "redis+unix://" and before '?': [:password@]/socket/path.
absl::Status ParseSocketTarget(absl::string_view url, absl::string_view rest,
                               RedisOptions* o) {
  if (absl::StartsWith(rest, ":")) {
    const size_t at = rest.find('@');
    if (at == absl::string_view::npos) {
      return Bad(url, "a password must end with '@'");
    }
    if (absl::Status s = ParsePassword(url, rest.substr(0, at), o); !s.ok()) {
      return s;
    }
    rest = rest.substr(at + 1);
  }
  if (!absl::StartsWith(rest, "/")) {
    return Bad(url, "the socket path must be absolute (redis+unix:///path)");
  }
  if (!PercentDecode(rest, &o->unix_socket)) {
    return Bad(url, "malformed percent escape in the socket path");
  }
  return absl::OkStatus();
}

// The parameters after '?'. `db` is one of them only for a socket, whose
// URL has no other place for it.
absl::Status ParseQuery(absl::string_view url, absl::string_view query,
                        bool socket, RedisOptions* o) {
  absl::StatusOr<std::vector<internal::UrlParam>> params =
      internal::SplitUrlQuery("redis", url, query);
  if (!params.ok()) return params.status();
  for (const internal::UrlParam& param : *params) {
    const absl::string_view name = param.first, value = param.second;
    auto number = [&](int64_t lo, int64_t hi) {
      return internal::UrlInt("redis", url, param, lo, hi);
    };
    if (name == "db" && socket) {
      DQ_ASSIGN_OR_RETURN(int64_t v,
                          number(0, std::numeric_limits<int>::max()));
      o->db = static_cast<int>(v);
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
    } else if (name == "timeout_ms") {
      DQ_ASSIGN_OR_RETURN(int64_t v, number(1, 3600 * 1000));
      o->command_timeout = absl::Milliseconds(v);
    } else if (name == "pool") {
      DQ_ASSIGN_OR_RETURN(int64_t v, number(1, 1024));
      o->pool_size = static_cast<int>(v);
    } else if (name == "allow_eviction") {
      if (value != "1" && value != "0") {
        return Bad(url,
                   absl::StrCat("allow_eviction='", value, "' must be 1 or 0"));
      }
      o->allow_key_eviction = value == "1";
    } else {
      return Bad(url, absl::StrCat("unknown parameter '", name, "'"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<RedisOptions> ParseRedisUrl(absl::string_view url) {
  RedisOptions o;
  constexpr absl::string_view kTcp = "redis://";
  constexpr absl::string_view kSocket = "redis+unix://";
  const bool socket = absl::StartsWith(url, kSocket);
  if (!socket && !absl::StartsWith(url, kTcp)) {
    return Bad(url, "scheme must be redis:// or redis+unix://");
  }
  absl::string_view rest = url.substr(socket ? kSocket.size() : kTcp.size());
  absl::string_view query;
  if (size_t q = rest.find('?'); q != absl::string_view::npos) {
    query = rest.substr(q + 1);
    rest = rest.substr(0, q);
  }
  absl::Status parsed =
      socket ? ParseSocketTarget(url, rest, &o) : ParseTcpTarget(url, rest, &o);
  if (!parsed.ok()) return parsed;
  if (absl::Status s = ParseQuery(url, query, socket, &o); !s.ok()) return s;
  return o;
}

}  // namespace delayq
