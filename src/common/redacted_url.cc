// Copyright delayq authors.

#include "delayq/redacted_url.h"

#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "src/common/url_credentials.h"

namespace delayq {

namespace {

constexpr absl::string_view kHidden = "***";

// The schemes of ParseRedisUrl(). Only a known scheme is shown before
// credentials: anything else before an '@' may be a password.
constexpr absl::string_view kRedisSchemes[] = {
    "redis://",          "rediss://",          "redis+unix://",
    "redis+sentinel://", "rediss+sentinel://", "redis+cluster://",
    "rediss+cluster://",
};

// The schemes of ParsePostgresUrl(): their hosts may leave the port out,
// and their authority may be empty (libpq's default socket).
constexpr absl::string_view kPostgresSchemes[] = {"postgres://",
                                                  "postgresql://"};

// A host name, an IPv4 address or a bracketed IPv6 one.
bool IsHost(absl::string_view host) {
  if (host.empty()) return false;
  if (host.front() == '[') {
    if (host.size() < 3 || host.back() != ']') return false;
    for (char c : host.substr(1, host.size() - 2)) {
      if (!absl::ascii_isxdigit(c) && c != ':' && c != '.') return false;
    }
    return true;
  }
  for (char c : host) {
    if (!absl::ascii_isalnum(c) && c != '.' && c != '-' && c != '_') {
      return false;
    }
  }
  return true;
}

// "host:port" with a host as IsHost() takes it.
bool IsHostPort(absl::string_view text) {
  const size_t colon = text.rfind(':');
  if (colon == absl::string_view::npos || colon == 0) return false;
  const absl::string_view port = text.substr(colon + 1);
  if (port.empty() || port.size() > 5) return false;
  for (char c : port) {
    if (!absl::ascii_isdigit(c)) return false;
  }
  return IsHost(text.substr(0, colon));
}

// A PostgreSQL URL's host: "host:port" or a host alone. A bracketed IPv6
// address is one host however many ':' it holds.
bool IsPostgresHost(absl::string_view text) {
  if (IsHostPort(text)) return true;
  if (absl::StartsWith(text, "[")) return IsHost(text);
  return !absl::StrContains(text, ':') && IsHost(text);
}

// Whether `rest`, what follows "postgres://" and the credentials, starts
// with an authority that cannot hold a password: empty (before '/', '?' or
// the end), or a list of hosts with or without ports.
bool HasPlainPostgresAuthority(absl::string_view rest) {
  const absl::string_view authority = rest.substr(0, rest.find_first_of("/?"));
  if (authority.empty()) return true;
  for (absl::string_view one : absl::StrSplit(authority, ',')) {
    if (!IsPostgresHost(one)) return false;
  }
  return true;
}

// Whether `rest`, what follows "//" and the credentials, starts with an
// authority that cannot hold a password: a list of host:port, or for a
// socket nothing before its path and no ':' in it (ParseRedisUrl() wants
// one written %3A: "user:password" whose '@' was forgotten holds one).
bool HasPlainAuthority(absl::string_view rest, bool socket) {
  const absl::string_view authority = rest.substr(0, rest.find_first_of("/?"));
  if (socket) {
    const absl::string_view path = rest.substr(0, rest.find('?'));
    return authority.empty() && absl::StartsWith(rest, "/") &&
           !absl::StrContains(path, ':');
  }
  if (authority.empty()) return false;
  for (absl::string_view one : absl::StrSplit(authority, ',')) {
    if (!IsHostPort(one)) return false;
  }
  return true;
}

// The value of a hex digit, -1 for any other character.
int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Whether a query parameter named `name` carries a secret: its name, with
// %XX escapes read and in any case, ends in "password" or "pwd"
// ("PASSWORD=", "sslpassword=", "pass%77ord=", "Pwd=").
bool NamesASecret(absl::string_view name) {
  std::string plain;
  for (size_t i = 0; i < name.size(); ++i) {
    const int hi = i + 2 < name.size() ? HexDigit(name[i + 1]) : -1;
    const int lo = i + 2 < name.size() ? HexDigit(name[i + 2]) : -1;
    if (name[i] == '%' && hi >= 0 && lo >= 0) {
      plain.push_back(static_cast<char>(hi * 16 + lo));
      i += 2;
    } else {
      plain.push_back(name[i]);
    }
  }
  absl::AsciiStrToLower(&plain);
  return absl::EndsWith(plain, "password") || absl::EndsWith(plain, "pwd");
}

// `param` (one of a query's, up to its '&') with the value of a *password
// parameter hidden, to its end. A value may hold '?', so a password
// parameter may also start after a '?' inside another's value
// ("a=host?password=P"): then it is hidden from there.
std::string HideParamPassword(absl::string_view param) {
  std::string out;
  bool first = true;
  for (absl::string_view piece : absl::StrSplit(param, '?')) {
    const size_t eq = piece.find('=');
    const absl::string_view name = piece.substr(0, eq);
    if (!first) out.push_back('?');
    first = false;
    if (eq != absl::string_view::npos && NamesASecret(name)) {
      absl::StrAppend(&out, name, "=", kHidden);
      return out;
    }
    absl::StrAppend(&out, piece);
  }
  return out;
}

// `text` with the values of query parameters named *password hidden.
std::string HideQueryPasswords(absl::string_view text) {
  const size_t q = text.find('?');
  if (q == absl::string_view::npos) return std::string(text);
  std::string out(text.substr(0, q + 1));
  bool first = true;
  for (absl::string_view param : absl::StrSplit(text.substr(q + 1), '&')) {
    if (!first) out.push_back('&');
    first = false;
    out += HideParamPassword(param);
  }
  return out;
}

}  // namespace

namespace internal {

bool CredentialsHoldQuery(absl::string_view credentials) {
  return credentials.find_first_of("?#") != absl::string_view::npos;
}

}  // namespace internal

std::string RedactedUrl(absl::string_view url) {
  // These stores have no credentials, and a file's path may hold '@'.
  if (absl::StartsWith(url, "sqlite:") || absl::StartsWith(url, "memory:")) {
    return HideQueryPasswords(url);
  }
  // Credentials take ':' (user:password, :password) or '@' (password@host);
  // text with neither holds none, but for its *password parameters.
  if (url.find_first_of(":@") == absl::string_view::npos) {
    return HideQueryPasswords(url);
  }
  for (absl::string_view scheme : kRedisSchemes) {
    absl::string_view rest = url;
    if (!absl::ConsumePrefix(&rest, scheme)) continue;
    // As ParseRedisUrl() reads it: the credentials run to the last '@'.
    // When they hold a '?' or '#', that '@' may be a query value's, so all
    // is hidden (and the parser refuses the URL). What follows is shown
    // only when it starts with a plain authority: the rest of a malformed
    // URL may be a password that lost its '@', or the part of one after an
    // '@' of its own.
    const size_t at = rest.rfind('@');
    const absl::string_view after =
        at == absl::string_view::npos ? rest : rest.substr(at + 1);
    const bool socket = scheme == "redis+unix://";
    if ((at != absl::string_view::npos &&
         internal::CredentialsHoldQuery(rest.substr(0, at))) ||
        !HasPlainAuthority(after, socket)) {
      return absl::StrCat(scheme, kHidden);
    }
    return absl::StrCat(scheme, at == absl::string_view::npos ? "" : "***@",
                        HideQueryPasswords(after));
  }
  for (absl::string_view scheme : kPostgresSchemes) {
    absl::string_view rest = url;
    if (!absl::ConsumePrefix(&rest, scheme)) continue;
    // As for Redis: the credentials run to the last '@', and what follows
    // is shown only when it starts with a plain authority.
    const size_t at = rest.rfind('@');
    const absl::string_view after =
        at == absl::string_view::npos ? rest : rest.substr(at + 1);
    if ((at != absl::string_view::npos &&
         internal::CredentialsHoldQuery(rest.substr(0, at))) ||
        !HasPlainPostgresAuthority(after)) {
      return absl::StrCat(scheme, kHidden);
    }
    return absl::StrCat(scheme, at == absl::string_view::npos ? "" : "***@",
                        HideQueryPasswords(after));
  }
  return std::string(kHidden);
}

}  // namespace delayq
