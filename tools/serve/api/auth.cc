// Copyright delayq authors.

#include "tools/serve/api/auth.h"

#include <fstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace delayq {
namespace serve {
namespace {

constexpr size_t kMinTokenLength = 16;
constexpr size_t kMaxTokenFileBytes = 4096;

bool ConstantTimeEqual(absl::string_view a, absl::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i) {
    diff |= static_cast<unsigned char>(a[i]) ^
            static_cast<unsigned char>(i < b.size() ? b[i] : 0);
  }
  return diff == 0;
}

}  // namespace

absl::StatusOr<std::string> ReadTokenFile(const std::string& path) {
  // Read no more than a token's line can be: the path may name something
  // endless (/dev/zero, a FIFO that never ends its line).
  std::ifstream in(path, std::ios::binary);
  std::string head(kMaxTokenFileBytes + 1, '\0');
  if (in) in.read(head.data(), head.size());
  if (!in && !in.eof()) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot read a token from ", path));
  }
  head.resize(in.gcount());
  const size_t end = head.find('\n');
  if (end == std::string::npos && head.size() > kMaxTokenFileBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("the first line of ", path, " is over ",
                     kMaxTokenFileBytes, " bytes: not a token"));
  }
  std::string token(absl::StripAsciiWhitespace(head.substr(0, end)));
  if (token.size() < kMinTokenLength) {
    return absl::InvalidArgumentError(
        absl::StrCat("the token in ", path, " is shorter than ",
                     kMinTokenLength, " characters"));
  }
  return token;
}

absl::Status CheckBearer(absl::string_view authorization,
                         absl::string_view token) {
  constexpr absl::string_view kScheme = "Bearer ";
  if (!absl::StartsWithIgnoreCase(authorization, kScheme)) {
    return absl::UnauthenticatedError(
        "this server needs 'Authorization: Bearer TOKEN'");
  }
  authorization.remove_prefix(kScheme.size());
  if (!ConstantTimeEqual(absl::StripAsciiWhitespace(authorization), token)) {
    return absl::UnauthenticatedError("wrong bearer token");
  }
  return absl::OkStatus();
}

}  // namespace serve
}  // namespace delayq
