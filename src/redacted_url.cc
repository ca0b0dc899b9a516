// Copyright delayq authors.

#include "delayq/redacted_url.h"

#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"

namespace delayq {

namespace {

// The userinfo before the host ("scheme://***@host...").
std::string RedactUserinfo(absl::string_view url) {
  const size_t scheme = url.find("://");
  if (scheme == absl::string_view::npos) return std::string(url);
  const size_t start = scheme + 3;
  const size_t at = url.rfind('@');
  if (at == absl::string_view::npos || at < start) return std::string(url);
  return absl::StrCat(url.substr(0, start), "***", url.substr(at));
}

}  // namespace

std::string RedactedUrl(absl::string_view url) {
  const size_t q = url.find('?');
  if (q == absl::string_view::npos) return RedactUserinfo(url);
  // Parameters named *password (sentinel_password=...) are hidden too.
  std::string out = RedactUserinfo(url.substr(0, q));
  absl::string_view query = url.substr(q + 1);
  out.push_back('?');
  bool first = true;
  for (absl::string_view param : absl::StrSplit(query, '&')) {
    if (!first) out.push_back('&');
    first = false;
    const size_t eq = param.find('=');
    const absl::string_view name = param.substr(0, eq);
    if (eq != absl::string_view::npos && absl::EndsWith(name, "password")) {
      absl::StrAppend(&out, name, "=***");
    } else {
      absl::StrAppend(&out, param);
    }
  }
  return out;
}

}  // namespace delayq
