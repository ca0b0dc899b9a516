// Copyright delayq authors.

#include "tools/serve/api/ack_list.h"

#include <cstdint>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace delayq {
namespace serve {
namespace {

bool IsJsonSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

// Reads {"leases": [{"id": "...", "token": "123" or 123}, ...]} straight
// from its bytes, or gives up: at anything else, and at what it leaves to
// the JSON parser though it is the plain shape (strings with escapes,
// control characters or bytes beyond ASCII; numbers that are not plain
// unsigned integers), so that what it does read is read as the parser
// reads it.
class PlainAckListScanner {
 public:
  explicit PlainAckListScanner(absl::string_view text)
      : at_(text.data()), end_(text.data() + text.size()) {}

  std::optional<std::vector<LeaseName>> Read() {
    std::vector<LeaseName> items;
    absl::string_view key;
    if (!Take('{') || !String(&key) || key != "leases" || !Take(':') ||
        !Take('[')) {
      return std::nullopt;
    }
    do {
      if (items.size() == kMaxAcks) return std::nullopt;
      items.emplace_back();
      if (!Item(&items.back())) return std::nullopt;
    } while (Take(','));
    if (!Take(']') || !Take('}')) return std::nullopt;
    SkipSpace();
    if (at_ != end_) return std::nullopt;
    return items;
  }

 private:
  void SkipSpace() {
    while (at_ < end_ && IsJsonSpace(*at_)) ++at_;
  }
  bool Take(char c) {
    SkipSpace();
    if (at_ == end_ || *at_ != c) return false;
    ++at_;
    return true;
  }
  bool Next(char c) {
    SkipSpace();
    return at_ < end_ && *at_ == c;
  }
  bool String(absl::string_view* out) {
    if (!Take('"')) return false;
    const char* start = at_;
    for (; at_ < end_ && *at_ != '"'; ++at_) {
      const unsigned char c = *at_;
      if (c < 0x20 || c >= 0x80 || c == '\\') return false;
    }
    if (at_ == end_) return false;
    *out = absl::string_view(start, at_ - start);
    ++at_;
    return true;
  }
  bool Unsigned(uint64_t* out) {
    SkipSpace();
    const char* start = at_;
    uint64_t value = 0;
    for (; at_ < end_ && *at_ >= '0' && *at_ <= '9'; ++at_) {
      const uint64_t digit = *at_ - '0';
      if (value > (UINT64_MAX - digit) / 10) return false;
      value = value * 10 + digit;
    }
    const size_t digits = at_ - start;
    if (digits == 0 || (digits > 1 && *start == '0')) return false;
    if (at_ < end_ && (*at_ == '.' || *at_ == 'e' || *at_ == 'E')) {
      return false;
    }
    *out = value;
    return true;
  }
  // {"id": "...", "token": "123" or 123}, either field first.
  bool Item(LeaseName* item) {
    if (!Take('{')) return false;
    bool has_id = false;
    bool has_token = false;
    do {
      absl::string_view key;
      if (!String(&key) || !Take(':')) return false;
      if (key == "id" && !has_id) {
        absl::string_view id;
        if (!String(&id) || id.empty()) return false;
        item->id.assign(id.data(), id.size());
        has_id = true;
      } else if (key == "token" && !has_token) {
        absl::string_view text;
        if (Next('"') ? !String(&text) || !absl::SimpleAtoi(text, &item->token)
                      : !Unsigned(&item->token)) {
          return false;
        }
        has_token = true;
      } else {
        return false;
      }
    } while (Take(','));
    return Take('}') && has_id && has_token;
  }

  const char* at_;
  const char* const end_;
};

}  // namespace

std::optional<std::vector<LeaseName>> AckListFromText(absl::string_view body) {
  return PlainAckListScanner(body).Read();
}

absl::StatusOr<std::vector<LeaseName>> AckListFromJson(const Json& body) {
  if (absl::Status s = OnlyFields(body, {"leases"}); !s.ok()) return s;
  // A reference into the body, never a copy of it: copying a value is
  // recursive (ParseBody bounds the depth, but this costs nothing).
  const auto found = body.find("leases");
  const Json* list = found == body.end() ? nullptr : &*found;
  if (list == nullptr || !list->is_array() || list->empty() ||
      list->size() > kMaxAcks) {
    return absl::InvalidArgumentError(
        absl::StrCat("field 'leases' must be a list of 1 to ", kMaxAcks,
                     " objects {\"id\", \"token\"}"));
  }
  std::vector<LeaseName> items;
  items.reserve(list->size());
  for (const Json& item : *list) {
    if (!item.is_object()) {
      return absl::InvalidArgumentError(
          "field 'leases' must hold objects {\"id\", \"token\"}");
    }
    if (absl::Status s = OnlyFields(item, {"id", "token"}); !s.ok()) return s;
    absl::StatusOr<std::string> id = StringField(item, "id", "");
    if (!id.ok()) return id.status();
    if (id->empty()) {
      return absl::InvalidArgumentError("each lease needs its job's 'id'");
    }
    absl::StatusOr<uint64_t> token = TokenField(item);
    if (!token.ok()) return token.status();
    items.push_back(LeaseName{*std::move(id), *token});
  }
  return items;
}

absl::StatusOr<std::vector<LeaseName>> ReadAckList(absl::string_view body) {
  if (std::optional<std::vector<LeaseName>> quick = AckListFromText(body)) {
    return *std::move(quick);
  }
  absl::StatusOr<Json> json = ParseBody(body);
  if (!json.ok()) return json.status();
  return AckListFromJson(*json);
}

}  // namespace serve
}  // namespace delayq
