// Copyright delayq authors.

#include "tools/common/values.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace delayq {
namespace cli {

absl::StatusOr<absl::Duration> ParseDurationValue(absl::string_view flag,
                                                  absl::string_view text) {
  absl::Duration d;
  if (!absl::ParseDuration(std::string(text), &d) ||
      d == absl::InfiniteDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat("bad duration for ", flag, ": '", text,
                     "' (write it like 250ms, 90s, 30m or 1h30m)"));
  }
  if (d < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, " must not be negative: '", text, "'"));
  }
  return d;
}

absl::StatusOr<absl::Time> ParseTimeValue(absl::string_view flag,
                                          absl::string_view text) {
  absl::Time t;
  std::string err;
  if (!absl::ParseTime(absl::RFC3339_full, std::string(text), &t, &err)) {
    return absl::InvalidArgumentError(
        absl::StrCat("bad time for ", flag, ": '", text,
                     "' (write it in RFC 3339, like 2026-12-01T10:00:00Z)"));
  }
  return t;
}

absl::StatusOr<int> ParseIntValue(absl::string_view what,
                                  absl::string_view text, int min, int max) {
  int value = 0;
  if (!absl::SimpleAtoi(text, &value) || value < min || value > max) {
    return absl::InvalidArgumentError(absl::StrCat(
        "bad ", what, ": '", text, "' (expected a whole number from ", min,
        " to ", max, ")"));
  }
  return value;
}

absl::StatusOr<Backoff> ParseBackoffValue(absl::string_view text) {
  const std::vector<absl::string_view> parts = absl::StrSplit(text, ':');
  const auto bad = [&]() {
    return absl::InvalidArgumentError(absl::StrCat(
        "bad --backoff: '", text,
        "' (write fixed:DELAY or exp:BASE[:MAX], like fixed:10s or "
        "exp:1s:10m)"));
  };
  absl::Duration a, b = absl::Minutes(10);
  if (parts.size() < 2 || !absl::ParseDuration(std::string(parts[1]), &a) ||
      a < absl::ZeroDuration()) {
    return bad();
  }
  if (parts[0] == "fixed" && parts.size() == 2) return Backoff::Fixed(a);
  if (parts[0] == "exp" && parts.size() <= 3) {
    if (parts.size() == 3 &&
        (!absl::ParseDuration(std::string(parts[2]), &b) || b < a)) {
      return bad();
    }
    // An omitted MAX is never below BASE: "exp:1h" waits an hour, then
    // longer, up to the hour (as "exp:1h:1h" does).
    if (parts.size() == 2) b = std::max(a, b);
    return Backoff::Exponential(a, b);
  }
  return bad();
}

std::string BackoffText(const Backoff& backoff) {
  if (backoff.kind == Backoff::Kind::kFixed) {
    return absl::StrCat("fixed:", DurationText(backoff.base));
  }
  return absl::StrCat("exp:", DurationText(backoff.base), ":",
                      DurationText(backoff.max));
}

std::string LimitText(const TopicLimit& limit) {
  std::vector<std::string> parts;
  if (limit.rate > 0) {
    parts.push_back(
        absl::StrCat("rate ", limit.rate, "/", DurationText(limit.period)));
    if (limit.burst > 1) parts.push_back(absl::StrCat("burst ", limit.burst));
  }
  if (limit.concurrency > 0) {
    parts.push_back(absl::StrCat("concurrency ", limit.concurrency));
  }
  return absl::StrJoin(parts, ", ");
}

std::string DurationText(absl::Duration d) { return absl::FormatDuration(d); }

namespace {

// `value` in exactly `width` decimal digits, zero-padded; the caller keeps
// it in range.
void PutDigits(int64_t value, int width, char* at) {
  for (int i = width - 1; i >= 0; --i) {
    at[i] = static_cast<char>('0' + value % 10);
    value /= 10;
  }
}

}  // namespace

std::string UtcText(absl::Time t) {
  std::string text;
  AppendUtcText(t, &text);
  return text;
}

namespace {

// "YYYY-MM-DD" of the day `days` after 1970-01-01 (0000-03-01 to
// 9999-12-31): the "civil from days" algorithm, fixed-width fields.
void PutDate(int64_t days, char* at) {
  const int64_t z = days + 719'468;  // days since 0000-03-01
  const int64_t era = z / 146'097;
  const int64_t doe = z - era * 146'097;
  const int64_t yoe = (doe - doe / 1460 + doe / 36'524 - doe / 146'096) / 365;
  const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const int64_t mp = (5 * doy + 2) / 153;
  const int64_t day = doy - (153 * mp + 2) / 5 + 1;
  const int64_t month = mp < 10 ? mp + 3 : mp - 9;
  const int64_t year = yoe + era * 400 + (month <= 2 ? 1 : 0);
  PutDigits(year, 4, at);
  at[4] = '-';
  PutDigits(month, 2, at + 5);
  at[7] = '-';
  PutDigits(day, 2, at + 8);
}

}  // namespace

void AppendUtcText(absl::Time t, std::string* out) {
  // By hand rather than absl::FormatTime() or snprintf(), which a reply of
  // a thousand leases would call thousands of times. The times of one
  // reply mostly fall on one day, so each thread keeps the last date it
  // wrote (a third of the cost).
  constexpr int64_t kDayMs = 86'400'000;
  const int64_t ms = absl::ToUnixMillis(t);  // rounds down
  if (t == absl::InfinitePast() || t == absl::InfiniteFuture() ||
      ms < -kDayMs * 719'468 || ms > kDayMs * 2'932'896) {  // 0000..9999
    // January and February of year 0, before the hand-written range, get
    // its four digits of year too ("%4Y"; "%Y" writes "0"). Only they:
    // years past int's range come out wrong with "%4Y" (292277026596
    // as -2147481749).
    const bool year_zero = ms >= -kDayMs * 719'528 && ms < -kDayMs * 719'468;
    out->append(absl::FormatTime(
        year_zero ? "%4Y-%m-%dT%H:%M:%E3SZ" : "%Y-%m-%dT%H:%M:%E3SZ", t,
        absl::UTCTimeZone()));
    return;
  }
  const int64_t days = ms >= 0 ? ms / kDayMs : (ms - kDayMs + 1) / kDayMs;
  const int64_t of_day = ms - days * kDayMs;
  struct LastDate {
    int64_t days = INT64_MIN;
    char text[10];
  };
  thread_local LastDate last;
  if (last.days != days) {
    PutDate(days, last.text);
    last.days = days;
  }
  char text[] = "YYYY-MM-DDThh:mm:ss.mmmZ";
  std::memcpy(text, last.text, sizeof(last.text));
  PutDigits(of_day / 3'600'000, 2, text + 11);
  PutDigits(of_day / 60'000 % 60, 2, text + 14);
  PutDigits(of_day / 1000 % 60, 2, text + 17);
  PutDigits(of_day % 1000, 3, text + 20);
  out->append(text, sizeof(text) - 1);
}

std::string LocalText(absl::Time t) {
  return absl::FormatTime("%Y-%m-%d %H:%M:%E3S %Z", t, absl::LocalTimeZone());
}

std::string RelativeText(absl::Time t, absl::Time now) {
  const absl::Duration d = t - now;
  const absl::Duration mag = absl::AbsDuration(d);
  const absl::Duration rounded = mag < absl::Seconds(1)
                                     ? absl::Trunc(mag, absl::Milliseconds(1))
                                     : absl::Trunc(mag, absl::Seconds(1));
  if (d >= absl::ZeroDuration()) {
    return absl::StrCat("in ", DurationText(rounded));
  }
  return absl::StrCat(DurationText(rounded), " ago");
}

}  // namespace cli
}  // namespace delayq
