// Copyright delayq authors.

#include "src/common/utf8.h"

#include <cstddef>
#include <cstdint>

namespace delayq {
namespace internal {
namespace {

// The length of the well-formed UTF-8 sequence at text[i], or 0 if none
// starts there.
size_t SequenceAt(absl::string_view text, size_t i) {
  const unsigned char c = text[i];
  if (c < 0x80) return 1;
  int extra;
  uint32_t code;
  if ((c & 0xE0) == 0xC0) {
    extra = 1;
    code = c & 0x1F;
  } else if ((c & 0xF0) == 0xE0) {
    extra = 2;
    code = c & 0x0F;
  } else if ((c & 0xF8) == 0xF0) {
    extra = 3;
    code = c & 0x07;
  } else {
    return 0;
  }
  if (i + extra >= text.size()) return 0;
  for (int k = 1; k <= extra; ++k) {
    const unsigned char cc = text[i + k];
    if ((cc & 0xC0) != 0x80) return 0;
    code = (code << 6) | (cc & 0x3F);
  }
  // Overlong forms, surrogates and values past U+10FFFF are not UTF-8.
  static constexpr uint32_t kMin[] = {0, 0x80, 0x800, 0x10000};
  if (code < kMin[extra] || code > 0x10FFFF ||
      (code >= 0xD800 && code <= 0xDFFF)) {
    return 0;
  }
  return extra + 1;
}

}  // namespace

bool IsUtf8(absl::string_view text) {
  for (size_t i = 0; i < text.size();) {
    const size_t n = SequenceAt(text, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string ToValidUtf8(absl::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const size_t n = SequenceAt(text, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";  // U+FFFD
      ++i;
    } else {
      out.append(text.data() + i, n);
      i += n;
    }
  }
  return out;
}

}  // namespace internal
}  // namespace delayq
