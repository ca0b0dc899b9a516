// Copyright delayq authors.

#include "tools/serve/http/listen_address.h"

#include <arpa/inet.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace delayq {
namespace serve {

absl::StatusOr<ListenAddress> ParseListenAddress(absl::string_view text) {
  const auto bad = [&] {
    return absl::InvalidArgumentError(
        absl::StrCat("bad listen address '", text,
                     "' (write HOST:PORT, like 127.0.0.1:7070 or [::1]:7070)"));
  };
  const size_t colon = text.rfind(':');
  if (colon == absl::string_view::npos) return bad();
  ListenAddress address;
  absl::string_view host = text.substr(0, colon);
  if (absl::ConsumePrefix(&host, "[") && !absl::ConsumeSuffix(&host, "]")) {
    return bad();
  }
  if (host.empty() ||
      !absl::SimpleAtoi(text.substr(colon + 1), &address.port) ||
      address.port < 0 || address.port > 65535) {
    return bad();
  }
  address.host = std::string(host);
  return address;
}

bool IsLoopback(absl::string_view host) {
  if (host == "localhost") return true;
  const std::string h(host);
  in_addr v4;
  if (inet_pton(AF_INET, h.c_str(), &v4) == 1) {
    return (ntohl(v4.s_addr) >> 24) == 127;
  }
  in6_addr v6;
  return inet_pton(AF_INET6, h.c_str(), &v6) == 1 && IN6_IS_ADDR_LOOPBACK(&v6);
}

}  // namespace serve
}  // namespace delayq
