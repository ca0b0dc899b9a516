// Copyright delayq authors.

#include "delayq/redacted_url.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace delayq {

std::string RedactedUrl(absl::string_view url) {
  const size_t scheme = url.find("://");
  if (scheme == absl::string_view::npos) return std::string(url);
  const size_t start = scheme + 3;
  const size_t at = url.rfind('@');
  if (at == absl::string_view::npos || at < start) return std::string(url);
  return absl::StrCat(url.substr(0, start), "***", url.substr(at));
}

}  // namespace delayq
