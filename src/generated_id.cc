// Copyright delayq authors.

#include "src/generated_id.h"

#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace delayq {
namespace internal {
namespace {

constexpr size_t kPrefixDigits = 12;
// Any 19-digit decimal fits in 64 bits.
constexpr size_t kMaxSerialDigits = 19;

}  // namespace

std::string NewGeneratedIdPrefix() {
  absl::BitGen gen;
  return absl::StrFormat("%012x",
                         absl::Uniform<uint64_t>(gen) & 0xffffffffffffULL);
}

std::string GeneratedId(absl::string_view prefix, uint64_t serial) {
  return absl::StrCat(prefix, "-", serial);
}

std::optional<GeneratedIdParts> ParseGeneratedId(absl::string_view id) {
  if (id.size() < kPrefixDigits + 2 ||
      id.size() > kPrefixDigits + 1 + kMaxSerialDigits ||
      id[kPrefixDigits] != '-' || id[kPrefixDigits + 1] == '0') {
    return std::nullopt;
  }
  GeneratedIdParts parts{0, 0};
  for (size_t i = 0; i < kPrefixDigits; ++i) {
    const char c = id[i];
    uint64_t digit;
    if (c >= '0' && c <= '9') {
      digit = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      digit = c - 'a' + 10;
    } else {
      return std::nullopt;
    }
    parts.prefix = parts.prefix << 4 | digit;
  }
  for (size_t i = kPrefixDigits + 1; i < id.size(); ++i) {
    const char c = id[i];
    if (c < '0' || c > '9') return std::nullopt;
    parts.serial = parts.serial * 10 + (c - '0');
  }
  return parts;
}

}  // namespace internal
}  // namespace delayq
