// Copyright delayq authors.

#include "src/common/generated_id.h"

#include <array>

#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace delayq {
namespace internal {
namespace {

constexpr size_t kPrefixDigits = 12;
// Any 19-digit decimal fits in 64 bits.
constexpr size_t kMaxSerialDigits = 19;

// Each character's value as a lowercase hex digit, or kNotADigit.
constexpr uint8_t kNotADigit = 0x80;
constexpr std::array<uint8_t, 256> MakeHexDigits() {
  std::array<uint8_t, 256> table{};
  for (auto& v : table) v = kNotADigit;
  for (int c = '0'; c <= '9'; ++c) table[c] = static_cast<uint8_t>(c - '0');
  for (int c = 'a'; c <= 'f'; ++c)
    table[c] = static_cast<uint8_t>(c - 'a' + 10);
  return table;
}
constexpr std::array<uint8_t, 256> kHexDigits = MakeHexDigits();

}  // namespace

std::string NewGeneratedIdPrefix() {
  absl::BitGen gen;
  return absl::StrFormat("%012x",
                         absl::Uniform<uint64_t>(gen) & 0xffffffffffffULL);
}

std::string GeneratedId(absl::string_view prefix, uint64_t serial) {
  // By hand rather than StrCat: one exact allocation, on every enqueue.
  const absl::AlphaNum digits(serial);
  std::string id;
  id.reserve(prefix.size() + 1 + digits.size());
  id.append(prefix.data(), prefix.size());
  id.push_back('-');
  id.append(digits.data(), digits.size());
  return id;
}

std::optional<GeneratedIdParts> ParseGeneratedId(absl::string_view id) {
  if (id.size() < kPrefixDigits + 2 ||
      id.size() > kPrefixDigits + 1 + kMaxSerialDigits ||
      id[kPrefixDigits] != '-' || id[kPrefixDigits + 1] == '0') {
    return std::nullopt;
  }
  // Every enqueue of a generated id reads it back here: one table lookup a
  // character, and one check at the end rather than a branch a character.
  GeneratedIdParts parts{0, 0};
  uint8_t seen = 0;
  for (size_t i = 0; i < kPrefixDigits; ++i) {
    const uint8_t digit = kHexDigits[static_cast<unsigned char>(id[i])];
    seen |= digit;
    parts.prefix = parts.prefix << 4 | (digit & 0xf);
  }
  for (size_t i = kPrefixDigits + 1; i < id.size(); ++i) {
    const uint8_t digit = kHexDigits[static_cast<unsigned char>(id[i])];
    seen |= digit > 9 ? kNotADigit : 0;  // decimal only
    parts.serial = parts.serial * 10 + (digit & 0xf);
  }
  if (seen & kNotADigit) return std::nullopt;
  return parts;
}

}  // namespace internal
}  // namespace delayq
