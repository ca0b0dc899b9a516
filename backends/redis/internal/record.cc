// Copyright delayq authors.

#include "backends/redis/internal/record.h"

#include <iterator>
#include <optional>
#include <variant>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/time/time.h"
#include "backends/redis/internal/replies.h"
#include "src/common/backoff_code.h"

namespace delayq {
namespace redis_internal {

namespace {

void AppendBigEndian(uint64_t v, int bytes, std::string* out) {
  for (int i = bytes - 1; i >= 0; --i) {
    out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  }
}

// One decoded value: nil, an integer or a string.
using Value = std::variant<std::monostate, int64_t, absl::string_view>;

// Reads MessagePack's nil, integers and strings (the only types a record
// holds; cmsgpack writes integral numbers as integers). False at the end of
// the input or on anything else.
class Reader {
 public:
  explicit Reader(absl::string_view in) : in_(in) {}
  bool done() const { return in_.empty(); }

  bool Next(Value* v) {
    if (in_.empty()) return false;
    const uint8_t tag = static_cast<uint8_t>(in_[0]);
    in_.remove_prefix(1);
    if (tag <= 0x7f) return Set(int64_t{tag}, v);
    if (tag >= 0xe0) return Set(int64_t{static_cast<int8_t>(tag)}, v);
    if ((tag & 0xe0) == 0xa0) return String(tag & 0x1f, v);
    uint64_t u = 0;
    switch (tag) {
      case 0xc0:
        *v = std::monostate();
        return true;
      case 0xcc:
      case 0xcd:
      case 0xce:
      case 0xcf:
        if (!Unsigned(1 << (tag - 0xcc), &u) || u > uint64_t{INT64_MAX}) {
          return false;
        }
        return Set(static_cast<int64_t>(u), v);
      case 0xd0:
      case 0xd1:
      case 0xd2:
      case 0xd3: {
        const int bytes = 1 << (tag - 0xd0);
        if (!Unsigned(bytes, &u)) return false;
        // Sign-extend from the top bit of the value's width.
        if (bytes < 8 && (u >> (8 * bytes - 1)) != 0) {
          u |= ~uint64_t{0} << (8 * bytes);
        }
        return Set(static_cast<int64_t>(u), v);
      }
      case 0xd9:
      case 0xda:
      case 0xdb:
        if (!Unsigned(1 << (tag - 0xd9), &u)) return false;
        return String(u, v);
      default:
        return false;
    }
  }

 private:
  static bool Set(int64_t i, Value* v) {
    *v = i;
    return true;
  }
  bool Unsigned(int bytes, uint64_t* u) {
    if (in_.size() < static_cast<size_t>(bytes)) return false;
    *u = 0;
    for (int i = 0; i < bytes; ++i) {
      *u = (*u << 8) | static_cast<uint8_t>(in_[i]);
    }
    in_.remove_prefix(bytes);
    return true;
  }
  bool String(uint64_t len, Value* v) {
    if (in_.size() < len) return false;
    *v = in_.substr(0, len);
    in_.remove_prefix(len);
    return true;
  }

  absl::string_view in_;
};

}  // namespace

void AppendPackedInt(int64_t v, std::string* out) {
  if (v >= 0) {
    const uint64_t u = static_cast<uint64_t>(v);
    if (u <= 0x7f) {
      out->push_back(static_cast<char>(u));
    } else if (u <= 0xff) {
      out->push_back(static_cast<char>(0xcc));
      AppendBigEndian(u, 1, out);
    } else if (u <= 0xffff) {
      out->push_back(static_cast<char>(0xcd));
      AppendBigEndian(u, 2, out);
    } else if (u <= 0xffffffff) {
      out->push_back(static_cast<char>(0xce));
      AppendBigEndian(u, 4, out);
    } else {
      out->push_back(static_cast<char>(0xcf));
      AppendBigEndian(u, 8, out);
    }
    return;
  }
  const uint64_t u = static_cast<uint64_t>(v);
  if (v >= -32) {
    out->push_back(static_cast<char>(u & 0xff));
  } else if (v >= INT8_MIN) {
    out->push_back(static_cast<char>(0xd0));
    AppendBigEndian(u, 1, out);
  } else if (v >= INT16_MIN) {
    out->push_back(static_cast<char>(0xd1));
    AppendBigEndian(u, 2, out);
  } else if (v >= INT32_MIN) {
    out->push_back(static_cast<char>(0xd2));
    AppendBigEndian(u, 4, out);
  } else {
    out->push_back(static_cast<char>(0xd3));
    AppendBigEndian(u, 8, out);
  }
}

void AppendPackedString(absl::string_view s, std::string* out) {
  if (s.size() < 32) {
    out->push_back(static_cast<char>(0xa0 | s.size()));
  } else if (s.size() <= 0xff) {
    out->push_back(static_cast<char>(0xd9));
    AppendBigEndian(s.size(), 1, out);
  } else if (s.size() <= 0xffff) {
    out->push_back(static_cast<char>(0xda));
    AppendBigEndian(s.size(), 2, out);
  } else {
    out->push_back(static_cast<char>(0xdb));
    AppendBigEndian(s.size(), 4, out);
  }
  out->append(s.data(), s.size());
}

void AppendSpec(const NewJob& job, std::string* out) {
  AppendPackedInt(job.priority, out);
  AppendPackedInt(job.max_attempts, out);
  AppendPackedInt(DurationMicros(job.ttr), out);
  AppendPackedInt(internal::BackoffCode(job.backoff), out);
  AppendPackedInt(DurationMicros(job.backoff.base), out);
  AppendPackedInt(DurationMicros(job.backoff.max), out);
}

void AppendAfter(const NewJob& job, std::string* out) {
  if (job.after.empty()) return;
  int policy = 0;
  switch (job.on_dependency_failure) {
    case DependencyFailure::kFail:
      policy = 0;
      break;
    case DependencyFailure::kCancel:
      policy = 1;
      break;
    case DependencyFailure::kRun:
      policy = 2;
      break;
  }
  AppendPackedInt(policy, out);
  // Each once: a waiting job counts the dependencies it still waits for.
  absl::flat_hash_set<absl::string_view> seen;
  for (const std::string& id : job.after) {
    if (seen.insert(id).second) AppendPackedString(id, out);
  }
}

void AppendPackedNil(std::string* out) {
  out->push_back(static_cast<char>(0xc0));
}

void AppendExtras(const NewJob& job, std::string* out) {
  const bool expires = job.expire_at != absl::InfiniteFuture();
  const bool keeps = job.keep_for > absl::ZeroDuration();
  if (!expires && job.unique_for <= absl::ZeroDuration() && !keeps) return;
  if (expires) {
    AppendPackedInt(ClampMicros(job.expire_at), out);
  } else {
    AppendPackedNil(out);
  }
  if (expires && job.discard_expired) {
    AppendPackedInt(1, out);
  } else {
    AppendPackedNil(out);
  }
  if (job.unique_for > absl::ZeroDuration()) {
    AppendPackedInt(DurationMicros(job.unique_for), out);
  } else {
    AppendPackedNil(out);
  }
  if (keeps) {
    AppendPackedInt(DurationMicros(job.keep_for), out);
    AppendPackedInt(job.keep_at_most, out);
  }
}

namespace {

// A record's values by field name; those past its end are nil.
class RecordValues {
 public:
  // False when `record` is not one.
  bool Read(absl::string_view record) {
    Reader reader(record);
    size_t n = 0;
    while (!reader.done()) {
      if (n == kCount || !reader.Next(&values_[n])) return false;
      ++n;
    }
    return n >= kRecordMinFields;
  }
  const Value& at(const char* name) const {
    return values_[FieldAt(kRecordFields, name)];
  }
  bool is_nil(const char* name) const {
    return std::holds_alternative<std::monostate>(at(name));
  }
  // An integer value, 0 for nil; false for a string.
  bool integer(const char* name, int64_t* out) const {
    const Value& v = at(name);
    if (std::holds_alternative<std::monostate>(v)) {
      *out = 0;
      return true;
    }
    if (!std::holds_alternative<int64_t>(v)) return false;
    *out = std::get<int64_t>(v);
    return true;
  }

 private:
  static constexpr size_t kCount = std::size(kRecordFields);
  Value values_[kCount];
};

// The ids of a record's `after`: MessagePack strings one after another.
bool DecodeAfter(const Value& packed, std::vector<std::string>* ids) {
  ids->clear();
  if (std::holds_alternative<std::monostate>(packed)) return true;
  if (!std::holds_alternative<absl::string_view>(packed)) return false;
  Reader reader(std::get<absl::string_view>(packed));
  while (!reader.done()) {
    Value id;
    if (!reader.Next(&id) || !std::holds_alternative<absl::string_view>(id)) {
      return false;
    }
    ids->emplace_back(std::get<absl::string_view>(id));
  }
  return true;
}

}  // namespace

bool DecodeBatch(absl::string_view record, Batch* batch) {
  RecordValues values;
  if (!values.Read(record) || values.is_nil("batch_total")) return false;
  int64_t closed = 0;
  if (!values.integer("batch_closed", &closed) ||
      !values.integer("batch_total", &batch->total) ||
      !values.integer("batch_done", &batch->done) ||
      !values.integer("batch_dead", &batch->dead) ||
      !values.integer("batch_cancelled", &batch->cancelled)) {
    return false;
  }
  batch->closed = closed != 0;
  return true;
}

bool DecodeRecord(absl::string_view record, Lease* lease) {
  RecordValues values;
  if (!values.Read(record)) return false;
  auto at = [&values](const char* name) -> const Value& {
    return values.at(name);
  };
  auto integer = [&values](const char* name, int64_t* out) {
    return values.integer(name, out);
  };
  auto text = [&at](const char* name, std::string* out) {
    const Value& v = at(name);
    if (std::holds_alternative<std::monostate>(v)) {
      out->clear();
      return true;
    }
    if (!std::holds_alternative<absl::string_view>(v)) return false;
    *out = std::string(std::get<absl::string_view>(v));
    return true;
  };
  Job& job = lease->job;
  int64_t state = 0, priority = 0, max_attempts = 0, ttr = 0, kind = 0,
          base = 0, max = 0, enqueued_at = 0, run_at = 0, seq = 0, attempts = 0,
          deadline = 0, token = 0, expire_at = 0, discard = 0, unique_for = 0,
          keep_for = 0, keep_at_most = 0, finished_at = 0, reserved_at = 0;
  if (!text("topic", &job.topic) || !integer("state", &state) ||
      !integer("priority", &priority) ||
      !integer("max_attempts", &max_attempts) || !integer("ttr", &ttr) ||
      !integer("backoff_kind", &kind) || !integer("backoff_base", &base) ||
      !integer("backoff_max", &max) || !integer("enqueued_at", &enqueued_at) ||
      !integer("run_at", &run_at) || !integer("seq", &seq) ||
      !text("payload", &job.payload) || !integer("attempts", &attempts) ||
      !integer("deadline", &deadline) || !integer("token", &token) ||
      !text("last_error", &job.last_error) ||
      !integer("expire_at", &expire_at) || !integer("discard", &discard) ||
      !integer("unique_for", &unique_for) || !integer("keep_for", &keep_for) ||
      !integer("keep_at_most", &keep_at_most) ||
      !integer("finished_at", &finished_at) || !text("result", &job.result) ||
      !text("holder", &job.holder) || !integer("reserved_at", &reserved_at) ||
      !DecodeAfter(at("after"), &job.after) || state < 0 ||
      state >= static_cast<int64_t>(std::size(kRecordStates)) ||
      !ParseJobState(kRecordStates[state], &job.state)) {
    return false;
  }
  job.priority = static_cast<int>(priority);
  job.max_attempts = static_cast<int>(max_attempts);
  job.ttr = absl::Microseconds(ttr);
  job.backoff = internal::BackoffFromCode(kind, absl::Microseconds(base),
                                          absl::Microseconds(max));
  if (!std::holds_alternative<std::monostate>(at("expire_at"))) {
    job.expire_at = absl::FromUnixMicros(expire_at);
    job.discard_expired = discard != 0;
  }
  job.unique_for = absl::Microseconds(unique_for);
  job.keep_for = absl::Microseconds(keep_for);
  job.keep_at_most = static_cast<int>(keep_at_most);
  const bool finished = IsFinished(job.state);
  job.finished_at =
      finished && !std::holds_alternative<std::monostate>(at("finished_at"))
          ? absl::FromUnixMicros(finished_at)
          : absl::InfinitePast();
  job.enqueued_at = absl::FromUnixMicros(enqueued_at);
  job.run_at = absl::FromUnixMicros(run_at);
  job.attempts = static_cast<int>(attempts);
  const bool has_deadline =
      job.state == JobState::kReserved &&
      !std::holds_alternative<std::monostate>(at("deadline"));
  job.deadline =
      has_deadline ? absl::FromUnixMicros(deadline) : absl::InfinitePast();
  // A lease made before layout 7 has no holder and no time.
  if (job.state == JobState::kReserved &&
      !std::holds_alternative<std::monostate>(at("reserved_at"))) {
    job.reserved_at = absl::FromUnixMicros(reserved_at);
  } else {
    job.holder.clear();
  }
  lease->token = static_cast<uint64_t>(token);
  lease->deadline = job.deadline;
  return true;
}

}  // namespace redis_internal
}  // namespace delayq
