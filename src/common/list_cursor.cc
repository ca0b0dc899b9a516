// Copyright delayq authors.

#include "src/common/list_cursor.h"

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace delayq {
namespace internal {
namespace {

// The first byte of the decoded text: a later form of cursor gets another,
// so a cursor kept across an upgrade is refused clearly, not misread.
constexpr char kVersion = '1';

absl::Status BadCursor(absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("bad cursor: ", why));
}

// Reads one "<length>:<bytes>" field from the front of `*in`.
bool TakeField(absl::string_view* in, std::string* field) {
  const size_t colon = in->find(':');
  if (colon == absl::string_view::npos || colon == 0 || colon > 5) return false;
  const absl::string_view digits = in->substr(0, colon);
  size_t length = 0;
  if (digits.find_first_not_of("0123456789") != absl::string_view::npos ||
      !absl::SimpleAtoi(digits, &length)) {
    return false;
  }
  in->remove_prefix(colon + 1);
  if (length > in->size()) return false;
  *field = std::string(in->substr(0, length));
  in->remove_prefix(length);
  return true;
}

}  // namespace

std::string EncodeListCursor(const ListCursor& cursor) {
  // Length-prefixed fields, so a part may hold any bytes (a Redis member).
  std::string raw(1, kVersion);
  const absl::string_view state = JobStateName(cursor.state);
  absl::StrAppend(&raw, state.size(), ":", state);
  for (const std::string& part : cursor.parts) {
    absl::StrAppend(&raw, part.size(), ":", part);
  }
  std::string text;
  absl::WebSafeBase64Escape(raw, &text);
  return text;
}

absl::StatusOr<ListCursor> DecodeListCursor(absl::string_view text,
                                            JobState state, size_t parts) {
  if (text.empty()) return BadCursor("empty");
  if (text.size() > kMaxListCursorBytes) {
    return BadCursor(
        absl::StrCat("longer than ", kMaxListCursorBytes, " characters"));
  }
  std::string raw;
  if (text.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvw"
                             "xyz0123456789-_") != absl::string_view::npos ||
      !absl::WebSafeBase64Unescape(text, &raw)) {
    return BadCursor("not a cursor that a job list gave");
  }
  if (raw.empty() || raw[0] != kVersion) {
    return BadCursor("not a cursor of this version");
  }
  absl::string_view in(raw);
  in.remove_prefix(1);
  std::string field;
  ListCursor cursor;
  if (!TakeField(&in, &field) || !ParseJobState(field, &cursor.state)) {
    return BadCursor("not a cursor that a job list gave");
  }
  if (cursor.state != state) {
    return BadCursor(absl::StrCat("it continues a list of ",
                                  JobStateName(cursor.state), " jobs, not of ",
                                  JobStateName(state), " ones"));
  }
  while (!in.empty()) {
    if (cursor.parts.size() == parts || !TakeField(&in, &field)) {
      return BadCursor("not a cursor that this store gave");
    }
    cursor.parts.push_back(std::move(field));
  }
  if (cursor.parts.size() != parts) {
    return BadCursor("not a cursor that this store gave");
  }
  return cursor;
}

absl::StatusOr<int64_t> CursorInt(const ListCursor& cursor, size_t part) {
  int64_t value = 0;
  absl::string_view text = cursor.parts[part];
  absl::string_view digits = text;
  if (!digits.empty() && digits[0] == '-') digits.remove_prefix(1);
  // SimpleAtoi takes spaces and a '+'; a cursor we made has neither.
  if (digits.empty() ||
      digits.find_first_not_of("0123456789") != absl::string_view::npos ||
      !absl::SimpleAtoi(text, &value)) {
    return BadCursor("not a cursor that this store gave");
  }
  return value;
}

size_t KeysetSize(JobState state) {
  switch (state) {
    case JobState::kReady:
      return 3;
    case JobState::kDead:
    case JobState::kWaiting:
      return 1;
    case JobState::kDelayed:
    case JobState::kReserved:
    case JobState::kDone:
      break;
  }
  return 2;
}

std::string EncodeIntCursor(JobState state, const std::vector<int64_t>& key) {
  ListCursor cursor;
  cursor.state = state;
  for (int64_t v : key) cursor.parts.push_back(absl::StrCat(v));
  return EncodeListCursor(cursor);
}

absl::StatusOr<std::vector<int64_t>> DecodeIntCursor(absl::string_view text,
                                                     JobState state,
                                                     size_t size) {
  absl::StatusOr<ListCursor> cursor = DecodeListCursor(text, state, size);
  if (!cursor.ok()) return cursor.status();
  std::vector<int64_t> key;
  for (size_t i = 0; i < size; ++i) {
    absl::StatusOr<int64_t> v = CursorInt(*cursor, i);
    if (!v.ok()) return v.status();
    key.push_back(*v);
  }
  return key;
}

}  // namespace internal
}  // namespace delayq
