// Copyright delayq authors.

#include "tools/serve/auth.h"

#include <fstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace delayq {
namespace serve {
namespace {

constexpr size_t kMinTokenLength = 16;

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
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot read a token from ", path));
  }
  std::string token(absl::StripAsciiWhitespace(line));
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
