// Copyright delayq authors.

#include "tools/serve/ack_list.h"

#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace delayq {
namespace serve {
namespace {

// A SAX handler that refuses every event; the reader below accepts the
// ones its shape has.
class RefuseAll : public nlohmann::json_sax<Json> {
 public:
  bool null() override { return false; }
  bool boolean(bool) override { return false; }
  bool number_integer(number_integer_t) override { return false; }
  bool number_unsigned(number_unsigned_t) override { return false; }
  bool number_float(number_float_t, const string_t&) override { return false; }
  bool string(string_t&) override { return false; }
  bool binary(binary_t&) override { return false; }
  bool start_object(std::size_t) override { return false; }
  bool key(string_t&) override { return false; }
  bool end_object() override { return false; }
  bool start_array(std::size_t) override { return false; }
  bool end_array() override { return false; }
  bool parse_error(std::size_t, const std::string&,
                   const nlohmann::detail::exception&) override {
    return false;
  }
};

// {"leases": [{"id": "...", "token": "123" or 123}, ...]}.
class AckListReader : public RefuseAll {
 public:
  std::vector<LeaseName> items;

  bool start_object(std::size_t) override {
    if (where_ == Where::kStart) {
      where_ = Where::kTop;
    } else if (where_ == Where::kList && items.size() < kMaxAcks) {
      items.emplace_back();
      has_id_ = has_token_ = false;
      where_ = Where::kItem;
    } else {
      return false;
    }
    return true;
  }
  bool key(string_t& name) override {
    if (where_ == Where::kTop && name == "leases" && !has_list_) {
      has_list_ = true;
      where_ = Where::kListValue;
    } else if (where_ == Where::kItem && name == "id" && !has_id_) {
      where_ = Where::kId;
    } else if (where_ == Where::kItem && name == "token" && !has_token_) {
      where_ = Where::kToken;
    } else {
      return false;
    }
    return true;
  }
  bool start_array(std::size_t) override {
    if (where_ != Where::kListValue) return false;
    where_ = Where::kList;
    return true;
  }
  bool string(string_t& value) override {
    if (where_ == Where::kId && !value.empty()) {
      items.back().id = std::move(value);
      has_id_ = true;
    } else if (where_ != Where::kToken ||
               !absl::SimpleAtoi(value, &items.back().token)) {
      return false;
    } else {
      has_token_ = true;
    }
    where_ = Where::kItem;
    return true;
  }
  bool number_unsigned(number_unsigned_t value) override {
    if (where_ != Where::kToken) return false;
    items.back().token = value;
    has_token_ = true;
    where_ = Where::kItem;
    return true;
  }
  bool end_object() override {
    if (where_ == Where::kItem && has_id_ && has_token_) {
      where_ = Where::kList;
    } else if (where_ == Where::kTop && has_list_) {
      where_ = Where::kEnd;
    } else {
      return false;
    }
    return true;
  }
  bool end_array() override {
    if (where_ != Where::kList || items.empty()) return false;
    where_ = Where::kTop;
    return true;
  }

 private:
  enum class Where {
    kStart,
    kTop,
    kListValue,
    kList,
    kItem,
    kId,
    kToken,
    kEnd
  };

  Where where_ = Where::kStart;
  bool has_list_ = false;
  bool has_id_ = false;
  bool has_token_ = false;
};

}  // namespace

std::optional<std::vector<LeaseName>> AckListFromText(absl::string_view body) {
  AckListReader reader;
  if (!Json::sax_parse(body.begin(), body.end(), &reader)) return std::nullopt;
  return std::move(reader.items);
}

absl::StatusOr<std::vector<LeaseName>> AckListFromJson(const Json& body) {
  if (absl::Status s = OnlyFields(body, {"leases"}); !s.ok()) return s;
  const Json& list = body.contains("leases") ? body["leases"] : Json();
  if (!list.is_array() || list.empty() || list.size() > kMaxAcks) {
    return absl::InvalidArgumentError(
        absl::StrCat("field 'leases' must be a list of 1 to ", kMaxAcks,
                     " objects {\"id\", \"token\"}"));
  }
  std::vector<LeaseName> items;
  items.reserve(list.size());
  for (const Json& item : list) {
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
