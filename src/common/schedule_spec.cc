// Copyright delayq authors.

#include "src/common/schedule_spec.h"

#include <cstdint>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace delayq {
namespace internal {
namespace {

// One cron field: its name in messages, its range and, for months and
// weekdays, the names of its values from `min` on.
struct Field {
  const char* name;
  int min;
  int max;
  std::vector<absl::string_view> names;
};

const Field& SecondField() {
  static const Field* f = new Field{"second", 0, 59, {}};
  return *f;
}
const Field& MinuteField() {
  static const Field* f = new Field{"minute", 0, 59, {}};
  return *f;
}
const Field& HourField() {
  static const Field* f = new Field{"hour", 0, 23, {}};
  return *f;
}
const Field& DayField() {
  static const Field* f = new Field{"day-of-month", 1, 31, {}};
  return *f;
}
const Field& MonthField() {
  static const Field* f = new Field{"month",
                                    1,
                                    12,
                                    {"jan", "feb", "mar", "apr", "may", "jun",
                                     "jul", "aug", "sep", "oct", "nov", "dec"}};
  return *f;
}
// 7 is Sunday too, as in most crons.
const Field& WeekdayField() {
  static const Field* f = new Field{
      "day-of-week", 0, 7, {"sun", "mon", "tue", "wed", "thu", "fri", "sat"}};
  return *f;
}

// The macros and the cron spec each stands for.
absl::string_view Macro(absl::string_view name) {
  if (name == "@yearly" || name == "@annually") return "0 0 1 1 *";
  if (name == "@monthly") return "0 0 1 * *";
  if (name == "@weekly") return "0 0 * * 0";
  if (name == "@daily" || name == "@midnight") return "0 0 * * *";
  if (name == "@hourly") return "0 * * * *";
  return "";
}

class FieldParser {
 public:
  FieldParser(const Field& field, absl::string_view text,
              absl::string_view spec)
      : field_(field), text_(text), spec_(spec) {}

  // Sets the bit of every value the field lists.
  absl::Status Parse(std::bitset<64>* bits) const {
    if (text_.empty()) return Error("is empty");
    for (absl::string_view item : absl::StrSplit(text_, ',')) {
      if (absl::Status s = ParseItem(item, bits); !s.ok()) return s;
    }
    return absl::OkStatus();
  }

 private:
  // item := ('*' | value | value '-' value) ['/' step]
  absl::Status ParseItem(absl::string_view item, std::bitset<64>* bits) const {
    if (item.empty()) return Error("has an empty list item");
    int step = 1;
    bool has_step = false;
    if (size_t slash = item.find('/'); slash != absl::string_view::npos) {
      if (!absl::SimpleAtoi(item.substr(slash + 1), &step) || step < 1 ||
          step > field_.max) {
        return Error(absl::StrCat("has a bad step '", item.substr(slash + 1),
                                  "' (1-", field_.max, ")"));
      }
      item = item.substr(0, slash);
      has_step = true;
    }
    int lo = field_.min, hi = field_.max;
    if (item != "*") {
      const size_t dash = item.find('-');
      absl::Status s = Value(item.substr(0, dash), &lo);
      if (!s.ok()) return s;
      hi = lo;
      if (dash != absl::string_view::npos) {
        if (s = Value(item.substr(dash + 1), &hi); !s.ok()) return s;
        if (hi < lo) {
          return Error(absl::StrCat("has a backward range '", item, "'"));
        }
      } else if (has_step) {
        hi = field_.max;  // "a/n": from a to the end
      }
    }
    for (int v = lo; v <= hi; v += step) bits->set(v);
    return absl::OkStatus();
  }

  absl::Status Value(absl::string_view text, int* value) const {
    const std::string lower = absl::AsciiStrToLower(text);
    for (size_t i = 0; i < field_.names.size(); ++i) {
      if (lower == field_.names[i]) {
        *value = field_.min + static_cast<int>(i);
        return absl::OkStatus();
      }
    }
    if (!absl::SimpleAtoi(text, value) || text.empty() ||
        !absl::ascii_isdigit(text[0])) {
      return Error(absl::StrCat("has '", text, "', not a number",
                                field_.names.empty() ? "" : " or name"));
    }
    if (*value < field_.min || *value > field_.max) {
      return Error(absl::StrCat("has ", *value, ", outside ", field_.min, "-",
                                field_.max));
    }
    return absl::OkStatus();
  }

  absl::Status Error(absl::string_view what) const {
    return absl::InvalidArgumentError(absl::StrCat(
        field_.name, " field '", text_, "' of spec '", spec_, "' ", what));
  }

  const Field& field_;
  absl::string_view text_;
  absl::string_view spec_;
};

absl::Status ParseEvery(absl::string_view text, absl::string_view spec,
                        absl::Duration* every) {
  text = absl::StripAsciiWhitespace(text);
  if (!absl::ParseDuration(std::string(text), every) ||
      *every == absl::InfiniteDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat("@every of spec '", spec, "' needs a duration such as ",
                     "90s or 1h30m, not '", text, "'"));
  }
  if (*every < absl::Seconds(1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "@every of spec '", spec, "' must be at least 1s, not ", text));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ScheduleSpec> ScheduleSpec::Parse(absl::string_view spec) {
  // Every field listed value by value fits; a longer spec costs every read
  // of the schedules to parse it again.
  constexpr size_t kMaxSpecBytes = 1024;
  if (spec.size() > kMaxSpecBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("a schedule spec is at most ", kMaxSpecBytes,
                     " bytes, not ", spec.size()));
  }
  ScheduleSpec out;
  absl::string_view text = absl::StripAsciiWhitespace(spec);
  if (absl::ConsumePrefix(&text, "@every")) {
    if (absl::Status s = ParseEvery(text, spec, &out.every_); !s.ok()) {
      return s;
    }
    return out;
  }
  if (absl::StartsWith(text, "@")) {
    text = Macro(absl::AsciiStrToLower(text));
    if (text.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "unknown spec '", spec,
          "': the macros are @yearly, @annually, @monthly, @weekly, @daily, "
          "@midnight, @hourly and @every DURATION"));
    }
  }
  std::vector<absl::string_view> fields =
      absl::StrSplit(text, absl::ByAnyChar(" \t"), absl::SkipEmpty());
  if (fields.size() == 5) fields.insert(fields.begin(), "0");
  if (fields.size() != 6) {
    return absl::InvalidArgumentError(absl::StrCat(
        "spec '", spec, "' has ", fields.size(),
        " fields; cron takes 5 (minute hour day-of-month month day-of-week) ",
        "or 6 (a leading second)"));
  }
  const Field* kinds[] = {&SecondField(), &MinuteField(), &HourField(),
                          &DayField(),    &MonthField(),  &WeekdayField()};
  Bits* bits[] = {&out.seconds_, &out.minutes_, &out.hours_,
                  &out.days_,    &out.months_,  &out.weekdays_};
  for (int i = 0; i < 6; ++i) {
    absl::Status s = FieldParser(*kinds[i], fields[i], spec).Parse(bits[i]);
    if (!s.ok()) return s;
  }
  if (out.weekdays_[7]) out.weekdays_.set(0);
  out.days_restricted_ = !absl::StartsWith(fields[3], "*");
  out.weekdays_restricted_ = !absl::StartsWith(fields[5], "*");
  return out;
}

absl::Time ScheduleSpec::Next(absl::Time after,
                              const absl::TimeZone& tz) const {
  if (every_ > absl::ZeroDuration()) return NextEvery(after);
  return NextCron(after, tz);
}

absl::Time ScheduleSpec::NextEvery(absl::Time after) const {
  const absl::Time epoch = absl::UnixEpoch();
  // Long before the epoch (never stored, but InfinitePast is a valid
  // argument): the first occurrence counted is the epoch's.
  if (after < epoch) return epoch;
  // The multiple of every_ at or before `after`, plus every_: in time
  // arithmetic, which saturates (to InfiniteFuture at the far end) where
  // counting multiples in an int64 would overflow.
  absl::Duration rem;
  absl::IDivDuration(after - epoch, every_, &rem);
  return after - rem + every_;
}

bool ScheduleSpec::DayMatches(absl::CivilDay day) const {
  const bool dom = days_[day.day()];
  // absl counts weekdays from Monday = 0; cron from Sunday = 0.
  const int weekday = (static_cast<int>(absl::GetWeekday(day)) + 1) % 7;
  const bool dow = weekdays_[weekday];
  if (days_restricted_ && weekdays_restricted_) return dom || dow;
  return dom && dow;
}

absl::Time ScheduleSpec::NextCron(absl::Time after,
                                  const absl::TimeZone& tz) const {
  if (after == absl::InfiniteFuture()) return after;
  if (after == absl::InfinitePast()) after = absl::UnixEpoch();
  // Local times are visited in order, each once, from the second after
  // `after`'s; a field that does not match moves to the start of the next
  // value of that field.
  absl::CivilSecond c = absl::ToCivilSecond(after, tz) + 1;
  const absl::CivilSecond limit(c.year() + 400, 1, 1);
  while (c < limit) {
    if (!months_[c.month()]) {
      c = absl::CivilSecond(absl::CivilMonth(c) + 1);
    } else if (!DayMatches(absl::CivilDay(c))) {
      c = absl::CivilSecond(absl::CivilDay(c) + 1);
    } else if (!hours_[c.hour()]) {
      c = absl::CivilSecond(absl::CivilHour(c) + 1);
    } else if (!minutes_[c.minute()]) {
      c = absl::CivilSecond(absl::CivilMinute(c) + 1);
    } else if (!seconds_[c.second()]) {
      c += 1;
    } else {
      const absl::TimeZone::TimeInfo info = tz.At(c);
      // Skipped: the instant the gap ends; repeated: the first of the two.
      const absl::Time t = info.kind == absl::TimeZone::TimeInfo::SKIPPED
                               ? info.trans
                               : info.pre;
      if (t > after) return t;
      c += 1;
    }
  }
  return absl::InfiniteFuture();
}

namespace {

// Whether `name` has the form of an IANA zone name ("UTC", "Etc/GMT+5",
// "America/Argentina/Buenos_Aires"). Abseil also loads a zone from any
// file a name leads to ("/dev/stdin", "../../x", "file:/path"): reading a
// pipe would hang the caller, so only names of that form are looked up.
bool IsZoneName(absl::string_view name) {
  if (name.empty() || name.size() > 64) return false;
  for (absl::string_view part : absl::StrSplit(name, '/')) {
    if (part.empty() || part == "." || part == "..") return false;
    for (const char c : part) {
      if (!absl::ascii_isalnum(c) && c != '_' && c != '-' && c != '+') {
        return false;
      }
    }
  }
  return true;
}

}  // namespace

absl::StatusOr<absl::TimeZone> ParseTimeZone(absl::string_view name) {
  absl::TimeZone tz;
  if (!IsZoneName(name) || !absl::LoadTimeZone(std::string(name), &tz)) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown time zone '", name.substr(0, 64),
                     name.size() > 64 ? "...'" : "'",
                     " (an IANA name such as UTC or Europe/Berlin)"));
  }
  return tz;
}

}  // namespace internal
}  // namespace delayq
