// Copyright delayq authors.

#include "tools/common/text.h"

#include <cstdint>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace delayq {
namespace cli {

std::string JsonQuote(absl::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          absl::StrAppendFormat(&out, "\\u%04x", c);
        } else {
          out += c;
        }
    }
  }
  out += '"';
  return out;
}

std::string Preview(absl::string_view text, size_t max) {
  // Bytes of a valid UTF-8 text stay as they are; everything else that is
  // not printable ASCII becomes an escape, so one job is one line.
  const bool utf8 = IsUtf8(text);
  std::string out;
  for (const char c : text) {
    const unsigned char u = c;
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (u < 0x20 || u == 0x7F || (u >= 0x80 && !utf8)) {
      absl::StrAppendFormat(&out, "\\x%02x", u);
    } else {
      out += c;
    }
  }
  if (out.size() <= max) return out;
  size_t cut = max > 3 ? max - 3 : 0;
  // Do not cut a UTF-8 sequence in half.
  while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xC0) == 0x80) {
    --cut;
  }
  return absl::StrCat(out.substr(0, cut), "...");
}

std::string JsonText(absl::string_view name, absl::string_view text) {
  if (IsUtf8(text)) return absl::StrCat("\"", name, "\":", JsonQuote(text));
  return absl::StrCat("\"", name, "_base64\":\"", absl::Base64Escape(text),
                      "\"");
}

}  // namespace cli
}  // namespace delayq
