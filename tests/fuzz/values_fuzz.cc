// Copyright delayq authors.
//
// The values of the CLI and the server (tools/delayq/values.h): durations,
// times, backoff specs, counts, and the text they are written as.
//
// Properties:
//   - a duration that parses is written canonically: parsing
//     DurationText() of it gives it back, and writing that again gives the
//     same text; a duration built from the input (whole nanoseconds, any
//     size) survives DurationText() then ParseDurationValue();
//   - a backoff spec that parses is written by BackoffText() as a spec
//     that parses to the same backoff; its Delay() is never negative,
//     never above its cap, and does not shrink from one attempt to the
//     next;
//   - UtcText() writes exactly what absl::FormatTime() writes, with
//     four-digit years (it is a faster hand-written copy, with a per-thread
//     cache of the last date),
//     and reading it back gives the time rounded down to the millisecond;
//     a time that ParseTimeValue() reads survives the same way;
//   - ParseIntValue() gives a value in its range, which reads back;
//   - IsUtf8() agrees with nlohmann::json's UTF-8 check; JsonQuote() of
//     UTF-8 and JsonText() of any bytes read back as JSON;
//   - Preview() is one printable line of UTF-8 of at most `max` bytes (3,
//     "...", when `max` is smaller);
//   - a job list's cursor (src/common/list_cursor.h), which the server and
//     the CLI take from outside: any text decodes to a cursor or to
//     InvalidArgument; a cursor that decodes encodes to text that decodes
//     to the same cursor; a cursor built from the input (any bytes in its
//     parts) survives encoding then decoding, and its text is URL-safe.

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "fuzzer/FuzzedDataProvider.h"
#include "nlohmann/json.hpp"
#include "src/common/list_cursor.h"
#include "tests/fuzz/fuzz_check.h"
#include "tools/common/values.h"

namespace delayq {
namespace {

using fuzz::Escaped;

void CheckDurationText(absl::Duration d, const std::string& why) {
  const std::string text = cli::DurationText(d);
  absl::StatusOr<absl::Duration> back = cli::ParseDurationValue("--d", text);
  FUZZ_CHECK(back.ok() && *back == d, why, ": DurationText = '", text,
             "' reads back as ",
             back.ok() ? cli::DurationText(*back) : back.status().ToString());
  FUZZ_CHECK(cli::DurationText(*back) == text, why, ": '", text,
             "' is written again as '", cli::DurationText(*back), "'");
}

void CheckDurations(FuzzedDataProvider& in, const std::string& text) {
  absl::StatusOr<absl::Duration> d = cli::ParseDurationValue("--d", text);
  if (d.ok()) {
    FUZZ_CHECK(*d >= absl::ZeroDuration() && *d != absl::InfiniteDuration(),
               "'", Escaped(text), "' parses as ", cli::DurationText(*d));
    CheckDurationText(*d, absl::StrCat("'", Escaped(text), "'"));
  }
  const int64_t seconds = in.ConsumeIntegralInRange<int64_t>(0, INT64_MAX);
  const int nanos = in.ConsumeIntegralInRange(0, 999'999'999);
  const absl::Duration built =
      absl::Seconds(seconds) + absl::Nanoseconds(nanos);
  if (built != absl::InfiniteDuration()) {
    CheckDurationText(
        built, absl::StrCat("the duration ", absl::FormatDuration(built)));
  }
  // Small ones, where the units change.
  const uint32_t unit = in.ConsumeIntegral<uint32_t>();
  const int times = in.ConsumeIntegralInRange(1, 100'000);
  const absl::Duration small = absl::Nanoseconds(unit) * times;
  CheckDurationText(small, "a small duration");
}

void CheckBackoff(const std::string& text) {
  absl::StatusOr<Backoff> b = cli::ParseBackoffValue(text);
  if (!b.ok()) return;
  const std::string written = cli::BackoffText(*b);
  absl::StatusOr<Backoff> back = cli::ParseBackoffValue(written);
  FUZZ_CHECK(back.ok() && *back == *b, "backoff '", Escaped(text),
             "' is written '", written, "', which reads back as ",
             back.ok() ? cli::BackoffText(*back) : back.status().ToString());
  absl::Duration before = absl::ZeroDuration();
  const absl::Duration cap =
      b->kind == Backoff::Kind::kFixed ? b->base : b->max;
  for (int attempt = 1; attempt <= 70; ++attempt) {
    const absl::Duration delay = b->Delay(attempt);
    FUZZ_CHECK(delay >= before && delay <= cap, "backoff '", Escaped(text),
               "': Delay(", attempt, ") = ", cli::DurationText(delay),
               " after ", cli::DurationText(before));
    before = delay;
  }
}

absl::Time FloorMillis(absl::Time t) {
  return absl::UnixEpoch() +
         absl::Floor(t - absl::UnixEpoch(), absl::Milliseconds(1));
}

void CheckUtcText(absl::Time t, const std::string& why) {
  const std::string fast = cli::UtcText(t);
  // RFC 3339 years have four digits: "%4Y" pads years 0..999, which "%Y"
  // does not; other years UtcText() writes with absl::FormatTime()'s "%Y".
  const bool four_digits =
      t != absl::InfinitePast() && t != absl::InfiniteFuture() &&
      absl::ToCivilYear(t, absl::UTCTimeZone()).year() >= 0 &&
      absl::ToCivilYear(t, absl::UTCTimeZone()).year() <= 9999;
  const std::string slow = absl::FormatTime(
      four_digits ? "%4Y-%m-%dT%H:%M:%E3SZ" : "%Y-%m-%dT%H:%M:%E3SZ", t,
      absl::UTCTimeZone());
  FUZZ_CHECK(fast == slow, why, ": UtcText = ", fast, ", FormatTime = ", slow);
  if (t == absl::InfinitePast() || t == absl::InfiniteFuture()) return;
  absl::StatusOr<absl::Time> back = cli::ParseTimeValue("--at", fast);
  FUZZ_CHECK(back.ok() && *back == FloorMillis(t), why, ": '", fast,
             "' reads back as ",
             back.ok() ? cli::UtcText(*back) : back.status().ToString());
}

void CheckTimes(FuzzedDataProvider& in, const std::string& text) {
  absl::StatusOr<absl::Time> t = cli::ParseTimeValue("--at", text);
  if (t.ok()) CheckUtcText(*t, absl::StrCat("'", Escaped(text), "'"));
  absl::Time built;
  switch (in.ConsumeIntegralInRange(0, 2)) {
    case 0:
      built = absl::FromUnixMicros(in.ConsumeIntegral<int64_t>());
      break;
    case 1:
      built = absl::FromUnixSeconds(in.ConsumeIntegral<int64_t>());
      break;
    default:  // years 0000..9999, the hand-written range
      built = absl::FromUnixMillis(in.ConsumeIntegralInRange<int64_t>(
          int64_t{-62'167'219'200'000}, int64_t{253'402'300'799'999}));
  }
  CheckUtcText(built,
               absl::StrCat("the time ", absl::ToUnixMicros(built), " us"));
  // Another time of the same day or nearby: the cached date must not stick.
  CheckUtcText(built + absl::Milliseconds(in.ConsumeIntegral<int32_t>()),
               "a time near it");
}

void CheckInt(FuzzedDataProvider& in, const std::string& text) {
  const int lo = in.ConsumeIntegral<int>();
  const int hi = in.ConsumeIntegralInRange<int>(lo, INT32_MAX);
  absl::StatusOr<int> v = cli::ParseIntValue("count", text, lo, hi);
  if (!v.ok()) return;
  FUZZ_CHECK(*v >= lo && *v <= hi, "'", Escaped(text), "' gave ", *v);
  absl::StatusOr<int> back =
      cli::ParseIntValue("count", absl::StrCat(*v), lo, hi);
  FUZZ_CHECK(back.ok() && *back == *v, "'", Escaped(text), "' gave ", *v,
             " which does not read back");
}

void CheckText(FuzzedDataProvider& in, const std::string& text) {
  bool json_utf8 = true;
  try {
    (void)nlohmann::json(text).dump();
  } catch (const nlohmann::json::exception&) {
    json_utf8 = false;
  }
  const bool utf8 = cli::IsUtf8(text);
  FUZZ_CHECK(utf8 == json_utf8, "IsUtf8('", Escaped(text), "') = ", utf8,
             ", nlohmann::json says ", json_utf8);
  if (utf8) {
    const std::string quoted = cli::JsonQuote(text);
    const nlohmann::json back =
        nlohmann::json::parse(quoted, nullptr, /*allow_exceptions=*/false);
    FUZZ_CHECK(back.is_string() && back.get<std::string>() == text,
               "JsonQuote('", Escaped(text), "') = ", Escaped(quoted));
  }
  const std::string object = absl::StrCat("{", cli::JsonText("t", text), "}");
  const nlohmann::json parsed =
      nlohmann::json::parse(object, nullptr, /*allow_exceptions=*/false);
  std::string decoded;
  const bool read_back =
      parsed.is_object() &&
      (utf8 ? parsed.contains("t") && parsed["t"] == text
            : parsed.contains("t_base64") && parsed["t_base64"].is_string() &&
                  absl::Base64Unescape(parsed["t_base64"].get<std::string>(),
                                       &decoded) &&
                  decoded == text);
  FUZZ_CHECK(read_back, "JsonText('", Escaped(text), "') = ", Escaped(object));

  const size_t max = in.ConsumeIntegralInRange<size_t>(0, 64);
  const std::string preview = cli::Preview(text, max);
  FUZZ_CHECK(preview.size() <= std::max<size_t>(max, 3) && cli::IsUtf8(preview),
             "Preview('", Escaped(text), "', ", max, ") = '", Escaped(preview),
             "'");
  for (const char c : preview) {
    FUZZ_CHECK(static_cast<unsigned char>(c) >= 0x20 && c != 0x7f, "Preview('",
               Escaped(text), "') = '", Escaped(preview),
               "' holds a control byte");
  }
}

bool SameCursor(const internal::ListCursor& a, const internal::ListCursor& b) {
  return a.state == b.state && a.parts == b.parts;
}

void CheckCursors(FuzzedDataProvider& in, const std::string& text) {
  const auto state = static_cast<JobState>(in.ConsumeIntegralInRange(0, 4));
  const size_t parts = in.ConsumeIntegralInRange<size_t>(0, 3);
  absl::StatusOr<internal::ListCursor> got =
      internal::DecodeListCursor(text, state, parts);
  FUZZ_CHECK(got.ok() || absl::IsInvalidArgument(got.status()), "'",
             Escaped(text), "' as a cursor: ", got.status().ToString());
  if (got.ok()) {
    const std::string again = internal::EncodeListCursor(*got);
    absl::StatusOr<internal::ListCursor> back =
        internal::DecodeListCursor(again, state, parts);
    FUZZ_CHECK(back.ok() && SameCursor(*back, *got), "'", Escaped(text),
               "' decodes, and its encoding '", again, "' does not read back");
  }
  internal::ListCursor built;
  built.state = state;
  for (size_t i = 0; i < parts; ++i) {
    built.parts.push_back(in.ConsumeRandomLengthString(40));
  }
  const std::string encoded = internal::EncodeListCursor(built);
  FUZZ_CHECK(encoded.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijk"
                                       "lmnopqrstuvwxyz0123456789-_") ==
                 std::string::npos,
             "cursor text '", encoded, "' is not URL-safe");
  absl::StatusOr<internal::ListCursor> back =
      internal::DecodeListCursor(encoded, state, parts);
  FUZZ_CHECK(back.ok() && SameCursor(*back, built), "a built cursor '", encoded,
             "' does not read back: ",
             back.ok() ? "other parts" : back.status().ToString());
}

}  // namespace
}  // namespace delayq

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace delayq;  // NOLINT: the entry point is outside the namespace
  FuzzedDataProvider in(data, size);
  const std::string text = in.ConsumeRandomLengthString(64);
  CheckDurations(in, text);
  CheckBackoff(text);
  CheckTimes(in, text);
  CheckInt(in, text);
  CheckText(in, text);
  CheckCursors(in, text);
  return 0;
}
