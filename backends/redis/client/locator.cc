// Copyright delayq authors.

#include "backends/redis/client/locator.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace delayq {
namespace redis_internal {

std::string HostPortText(const HostPort& e) {
  if (e.host.find(':') != std::string::npos) {
    return absl::StrCat("[", e.host, "]:", e.port);
  }
  return absl::StrCat(e.host, ":", e.port);
}

std::optional<HostPort> ParseHostPort(absl::string_view text) {
  const size_t colon = text.rfind(':');
  if (colon == absl::string_view::npos || colon == 0) return std::nullopt;
  HostPort at;
  if (!absl::SimpleAtoi(text.substr(colon + 1), &at.port) || at.port < 1 ||
      at.port > 65535) {
    return std::nullopt;
  }
  absl::string_view host = text.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  at.host = std::string(host);
  return at;
}

absl::StatusOr<Found> Locator::Find() {
  {
    internal::MutexLock lock(&mu_);
    if (known_.has_value()) return Found{*known_, generation_};
  }
  // Looked up without the lock: whoever is asked may take its timeout.
  absl::StatusOr<HostPort> found = Lookup();
  if (!found.ok()) return found.status();
  return Use(*found);
}

Found Locator::Use(const HostPort& at) {
  internal::MutexLock lock(&mu_);
  if (!known_.has_value() || known_->host != at.host ||
      known_->port != at.port) {
    ++generation_;
  }
  known_ = at;
  return Found{at, generation_};
}

void Locator::Forget(absl::string_view endpoint) {
  internal::MutexLock lock(&mu_);
  if (known_.has_value() && HostPortText(*known_) == endpoint) known_.reset();
}

uint64_t Locator::generation() const {
  internal::MutexLock lock(&mu_);
  return generation_;
}

}  // namespace redis_internal
}  // namespace delayq
