// Copyright delayq authors.

#include "backends/postgres/internal/connection.h"

#include <poll.h>

#include <limits>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/strip.h"
#include "src/common/utf8.h"

namespace delayq {
namespace postgres_internal {
namespace {

// libpq's messages end with a newline and may run to several lines.
std::string Tidy(const char* message) {
  std::string text = message == nullptr ? "" : message;
  absl::StripTrailingAsciiWhitespace(&text);
  for (char& c : text) {
    if (c == '\n') c = ' ';
  }
  return text;
}

// A failed connection has no SQLSTATE to read: its message says what
// happened (the server's messages are in English, lc_messages C, unless
// its administrator chose otherwise; then the code falls back on
// Unavailable, which is also right for a server that is down).
absl::StatusCode CodeOfConnectFailure(absl::string_view message) {
  if (absl::StrContains(message, "password authentication failed") ||
      absl::StrContains(message, "no password supplied") ||
      absl::StrContains(message, "no pg_hba.conf entry") ||
      absl::StrContains(message, "authentication failed")) {
    return absl::StatusCode::kPermissionDenied;
  }
  if (absl::StrContains(message, "database \"") &&
      absl::StrContains(message, "does not exist")) {
    return absl::StatusCode::kNotFound;
  }
  if (absl::StrContains(message, "invalid connection option") ||
      absl::StrContains(message, "invalid sslmode value") ||
      absl::StrContains(message, "invalid integer value")) {
    return absl::StatusCode::kInvalidArgument;
  }
  return absl::StatusCode::kUnavailable;
}

char HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  return static_cast<char>(absl::ascii_tolower(c) - 'a' + 10);
}

}  // namespace

int64_t ToMicros(absl::Time t) {
  // absl saturates at the int64 range for the infinite times.
  return absl::ToUnixMicros(t);
}

absl::Time FromMicros(int64_t us) {
  if (us == std::numeric_limits<int64_t>::max()) return absl::InfiniteFuture();
  if (us == std::numeric_limits<int64_t>::min()) return absl::InfinitePast();
  return absl::FromUnixMicros(us);
}

Params& Params::Int(int64_t v) {
  values_.push_back(absl::StrCat(v));
  formats_.push_back(0);
  null_.push_back(false);
  return *this;
}

std::string TextForStore(absl::string_view text) {
  std::string out = internal::ToValidUtf8(text);
  return absl::StrReplaceAll(out,
                             {{absl::string_view("\0", 1), "\xEF\xBF\xBD"}});
}

Params& Params::Text(absl::string_view v) {
  // libpq sends a text value as a C string: one with a NUL byte would reach
  // the server cut short, and name another job ("a\0b" as "a").
  if (refusal_.empty() && v.find('\0') != absl::string_view::npos) {
    refusal_ =
        "postgres: a text value holds a NUL byte, which PostgreSQL cannot "
        "store; no job, topic or name has one";
  }
  // The server would refuse it with an error that quotes the statement; say
  // instead why no job here can have such an id.
  if (refusal_.empty() && !internal::IsUtf8(v)) {
    refusal_ =
        "postgres: a text value is not UTF-8, which is all PostgreSQL's text "
        "keeps; no job, topic or name here has bytes that are not";
  }
  values_.push_back(std::string(v));
  formats_.push_back(0);
  null_.push_back(false);
  return *this;
}

Params& Params::Bytes(absl::string_view v) {
  values_.push_back(std::string(v));
  formats_.push_back(1);
  null_.push_back(false);
  return *this;
}

Params& Params::Null() {
  values_.emplace_back();
  formats_.push_back(0);
  null_.push_back(true);
  return *this;
}

Params& Params::MaybeInt(std::optional<int64_t> v) {
  return v.has_value() ? Int(*v) : Null();
}

namespace {

// PlanGenericallyWithNext()'s setting, for the transaction only.
constexpr char kGenericPlans[] =
    "SET LOCAL plan_cache_mode = force_generic_plan";

// An array element, double-quoted: '\' and '"' escaped.
void AppendElement(absl::string_view text, std::string* out) {
  out->push_back('"');
  for (char c : text) {
    if (c == '"' || c == '\\') out->push_back('\\');
    out->push_back(c);
  }
  out->push_back('"');
}

// A bytea's text form: "\x" and two hex digits a byte.
std::string HexBytea(absl::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out = "\\x";
  out.reserve(2 + 2 * bytes.size());
  for (unsigned char c : bytes) {
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 15]);
  }
  return out;
}

}  // namespace

Params& Params::TextArray(const std::vector<std::string>& v) {
  std::string out = "{";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i > 0) out.push_back(',');
    AppendElement(v[i], &out);
  }
  out.push_back('}');
  return Text(out);
}

Params& Params::BytesArray(const std::vector<std::string>& v) {
  std::string out = "{";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i > 0) out.push_back(',');
    AppendElement(HexBytea(v[i]), &out);
  }
  out.push_back('}');
  return Text(out);
}

Params& Params::IntArray(const std::vector<std::optional<int64_t>>& v) {
  std::string out = "{";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i > 0) out.push_back(',');
    if (v[i].has_value()) {
      absl::StrAppend(&out, *v[i]);
    } else {
      out += "NULL";
    }
  }
  out.push_back('}');
  return Text(out);
}

int64_t Result::Int(int row, int col) const {
  int64_t v = 0;
  if (!absl::SimpleAtoi(PQgetvalue(r_.get(), row, col), &v)) return 0;
  return v;
}

int64_t Result::Affected() const {
  int64_t v = 0;
  if (!absl::SimpleAtoi(PQcmdTuples(r_.get()), &v)) return 0;
  return v;
}

std::string Result::Text(int row, int col) const {
  return std::string(PQgetvalue(r_.get(), row, col),
                     PQgetlength(r_.get(), row, col));
}

bool Result::Bool(int row, int col) const {
  return PQgetvalue(r_.get(), row, col)[0] == 't';
}

std::string Result::Bytes(int row, int col) const {
  // bytea_output = hex (the default since PostgreSQL 9.0): "\x" and two
  // hex digits a byte.
  absl::string_view text(PQgetvalue(r_.get(), row, col),
                         PQgetlength(r_.get(), row, col));
  if (!absl::ConsumePrefix(&text, "\\x")) return std::string(text);
  std::string out(text.size() / 2, '\0');
  for (size_t i = 0; i < out.size(); ++i) {
    out[i] = static_cast<char>(HexValue(text[2 * i]) << 4 |
                               HexValue(text[2 * i + 1]));
  }
  return out;
}

absl::StatusCode CodeOfSqlState(absl::string_view state) {
  if (state == "23505") return absl::StatusCode::kAlreadyExists;
  if (state == "40001" || state == "40P01") return absl::StatusCode::kAborted;
  // A read-only transaction (25006): the server takes no writes now, a
  // standby or a database or role set read-only; the store is not there
  // for writes, as when it is down, and no fault of the call's.
  if (absl::StartsWith(state, "08") || state == "57P01" || state == "57P02" ||
      state == "57P03" || state == "25006") {
    return absl::StatusCode::kUnavailable;
  }
  if (state == "57014") return absl::StatusCode::kDeadlineExceeded;
  if (absl::StartsWith(state, "28") || state == "42501") {
    return absl::StatusCode::kPermissionDenied;
  }
  if (state == "3D000") return absl::StatusCode::kNotFound;
  if (absl::StartsWith(state, "53")) {
    return absl::StatusCode::kResourceExhausted;
  }
  return absl::StatusCode::kInternal;
}

absl::StatusOr<std::unique_ptr<Connection>> Connection::Open(
    const std::vector<std::pair<std::string, std::string>>& params,
    std::string where, absl::Duration answer_timeout) {
  std::vector<const char*> keys, values;
  for (const auto& [key, value] : params) {
    keys.push_back(key.c_str());
    values.push_back(value.c_str());
  }
  keys.push_back(nullptr);
  values.push_back(nullptr);
  // Blocking, bounded by connect_timeout per host (connect_plan.cc): libpq
  // moves on to a URL's next host only in its own blocking connect.
  PGconn* conn = PQconnectdbParams(keys.data(), values.data(),
                                   /*expand_dbname=*/0);
  if (conn == nullptr) {
    return absl::ResourceExhaustedError(
        absl::StrCat(where, ": cannot allocate a connection"));
  }
  if (PQstatus(conn) != CONNECTION_OK) {
    const std::string message = Tidy(PQerrorMessage(conn));
    PQfinish(conn);
    return absl::Status(CodeOfConnectFailure(message),
                        absl::StrCat(where, ": cannot connect: ", message));
  }
  // The server's notices (an existing schema, a connection it ends) are
  // not the application's output; errors come back as statuses.
  PQsetNoticeProcessor(
      conn, [](void*, const char*) {}, nullptr);
  // Sends do not block either: a server that reads nothing (frozen, with
  // the socket's buffers full) must not hold a call past its deadline.
  PQsetnonblocking(conn, 1);
  return std::unique_ptr<Connection>(
      new Connection(conn, std::move(where), /*owned=*/true, answer_timeout));
}

std::unique_ptr<Connection> Connection::Borrow(PGconn* conn,
                                               std::string where) {
  return std::unique_ptr<Connection>(new Connection(
      conn, std::move(where), /*owned=*/false, absl::InfiniteDuration()));
}

PGresult* Connection::NextResult(Deadline deadline) {
  // Sends what libpq holds, and reads until a whole result is in.
  for (;;) {
    if (PQstatus(conn_) == CONNECTION_BAD) break;
    const int unsent = PQflush(conn_);
    if (unsent < 0 || (unsent == 0 && !PQisBusy(conn_))) break;
    // Read while sending too: a server answering an error may stop
    // reading until its answer is read.
    const short events = unsent > 0 ? POLLIN | POLLOUT : POLLIN;
    if (!WaitForSocket(PQsocket(conn_), events, deadline)) {
      gave_up_ = true;
      return nullptr;
    }
    if (PQconsumeInput(conn_) == 0) break;
  }
  // Done, or failed: a lost connection's error is a result.
  return PQgetResult(conn_);
}

PGresult* Connection::Answer(bool sent) {
  if (!sent) return nullptr;
  const Deadline deadline = DeadlineAfter(answer_timeout_);
  PGresult* kept = nullptr;
  while (PGresult* r = NextResult(deadline)) {
    if (kept != nullptr && PQresultStatus(kept) == PGRES_FATAL_ERROR) {
      PQclear(r);
      continue;
    }
    PQclear(kept);
    kept = r;
  }
  if (gave_up_) {
    PQclear(kept);
    return nullptr;
  }
  return kept;
}

Connection::~Connection() {
  if (owned_) PQfinish(conn_);
}

std::string Connection::Literal(absl::string_view text) const {
  char* quoted = PQescapeLiteral(conn_, text.data(), text.size());
  if (quoted == nullptr) return "NULL";
  std::string out(quoted);
  PQfreemem(quoted);
  return out;
}

bool Connection::InTransaction() const {
  const PGTransactionStatusType s = PQtransactionStatus(conn_);
  return s == PQTRANS_INTRANS || s == PQTRANS_INERROR;
}

absl::StatusOr<Result> Connection::Exec(absl::string_view sql,
                                        const Params& params) {
  if (!params.refusal_.empty()) {
    return absl::InvalidArgumentError(params.refusal_);
  }
  const size_t n = params.values_.size();
  std::vector<const char*> values(n);
  std::vector<int> lengths(n);
  for (size_t i = 0; i < n; ++i) {
    values[i] = params.null_[i] ? nullptr : params.values_[i].data();
    lengths[i] = static_cast<int>(params.values_[i].size());
  }
  const std::string text(sql);
  Result result(nullptr);
  if (owned_) {
    if (begin_pending_ && !prepared_.contains(text)) {
      // Preparing takes a round trip anyway.
      for (const char* opening : TakeOpening()) {
        absl::Status run = Run(opening);
        if (!run.ok()) return run;
      }
      begin_confirmed_ = true;
    }
    absl::StatusOr<std::string> name = Prepared(text, static_cast<int>(n));
    if (!name.ok()) return name.status();
    if (begin_pending_ || commit_pending_) {
      const bool commit = commit_pending_;
      commit_pending_ = false;
      const std::vector<const char*> opening = TakeOpening();
      const std::vector<std::string> before_commit = std::move(before_commit_);
      before_commit_.clear();
      result = Result(ExecInPipeline(*name, static_cast<int>(n), values.data(),
                                     lengths.data(), params.formats_.data(),
                                     opening, before_commit, commit));
    } else {
      result = Result(
          Answer(PQsendQueryPrepared(conn_, name->c_str(), static_cast<int>(n),
                                     values.data(), lengths.data(),
                                     params.formats_.data(),
                                     /*resultFormat=*/0) == 1));
    }
  } else {
    // The application's connection: waited on as the application does.
    result = Result(PQexecParams(conn_, text.c_str(), static_cast<int>(n),
                                 /*paramTypes=*/nullptr, values.data(),
                                 lengths.data(), params.formats_.data(),
                                 /*resultFormat=*/0));
  }
  const ExecStatusType status = result.status();
  if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
    return ErrorOf(result.get(), sql);
  }
  return result;
}

absl::StatusOr<std::string> Connection::Prepared(const std::string& sql,
                                                 int params) {
  auto it = prepared_.find(sql);
  if (it != prepared_.end()) return it->second;
  std::string name = absl::StrCat("dq", prepared_.size() + 1);
  Result result(Answer(PQsendPrepare(conn_, name.c_str(), sql.c_str(), params,
                                     /*paramTypes=*/nullptr) == 1));
  if (result.status() != PGRES_COMMAND_OK) return ErrorOf(result.get(), sql);
  prepared_.emplace(sql, name);
  return name;
}

PGresult* Connection::ExecInPipeline(const std::string& name, int n,
                                     const char* const* values,
                                     const int* lengths, const int* formats,
                                     const std::vector<const char*>& opening,
                                     const std::vector<std::string>& then,
                                     bool commit) {
  auto send = [&](const char* sql) {
    return PQsendQueryParams(conn_, sql, 0, nullptr, nullptr, nullptr, nullptr,
                             0) == 1;
  };
  if (PQenterPipelineMode(conn_) != 1) return nullptr;
  bool sent = true;
  for (size_t i = 0; sent && i < opening.size(); ++i) sent = send(opening[i]);
  sent = sent && PQsendQueryPrepared(conn_, name.c_str(), n, values, lengths,
                                     formats, 0) == 1;
  for (size_t i = 0; sent && i < then.size(); ++i) sent = send(then[i].c_str());
  if (!sent || (commit && !send("COMMIT")) || PQpipelineSync(conn_) != 1) {
    PQexitPipelineMode(conn_);
    return nullptr;
  }
  // Each command's result comes followed by a null, then the sync; a
  // failed command leaves the ones after it aborted. Nulls past what the
  // pipeline holds mean the connection broke.
  const int commands = static_cast<int>(opening.size()) + 1 +
                       static_cast<int>(then.size()) + (commit ? 1 : 0);
  std::vector<PGresult*> results;
  const Deadline deadline = DeadlineAfter(answer_timeout_);
  for (int nulls = 0; nulls <= commands && !Broken();) {
    PGresult* r = NextResult(deadline);
    if (r == nullptr) {
      ++nulls;
      continue;
    }
    if (PQresultStatus(r) == PGRES_PIPELINE_SYNC) {
      PQclear(r);
      break;
    }
    results.push_back(r);
  }
  PQexitPipelineMode(conn_);
  results.resize(commands, nullptr);
  auto ok = [](PGresult* r) {
    return r != nullptr && (PQresultStatus(r) == PGRES_COMMAND_OK ||
                            PQresultStatus(r) == PGRES_TUPLES_OK);
  };
  if (!opening.empty()) begin_confirmed_ = ok(results[0]);
  // The first command that failed (none, for a lost connection) is the
  // one to report; the statement's rows only when all went through.
  size_t answer = opening.size();
  for (size_t i = 0; i < results.size(); ++i) {
    if (!ok(results[i])) {
      answer = i;
      break;
    }
  }
  PGresult* out = results[answer];
  results[answer] = nullptr;
  for (PGresult* r : results) PQclear(r);
  return out;
}

std::vector<const char*> Connection::TakeOpening() {
  std::vector<const char*> opening;
  if (begin_pending_) opening.push_back("BEGIN");
  if (begin_pending_ && generic_pending_) opening.push_back(kGenericPlans);
  begin_pending_ = generic_pending_ = false;
  return opening;
}

absl::Status Connection::RunScript(absl::string_view sql) {
  std::string text(sql);
  if (begin_pending_) {
    // A transaction whose only statements are these: once sent, it may
    // have committed.
    text = absl::StrCat(absl::StrJoin(TakeOpening(), ";\n"), ";\n", text);
    begin_confirmed_ = true;
  }
  // The application's connection (!owned_) is waited on as the
  // application does.
  Result result(owned_ ? Answer(PQsendQuery(conn_, text.c_str()) == 1)
                       : PQexec(conn_, text.c_str()));
  const ExecStatusType status = result.status();
  if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
    return ErrorOf(result.get(), sql);
  }
  return absl::OkStatus();
}

absl::Status Connection::Run(absl::string_view sql, const Params& params) {
  return Exec(sql, params).status();
}

absl::Status Connection::ErrorOf(const PGresult* r,
                                 absl::string_view sql) const {
  if (gave_up_) {
    last_sql_state_.clear();
    return absl::UnavailableError(absl::StrCat(
        where_, ": no answer from the server in ",
        absl::FormatDuration(answer_timeout_),
        "; gave up on the connection (in \"", sql.substr(0, 40), "...\")"));
  }
  const char* state =
      r == nullptr ? nullptr : PQresultErrorField(r, PG_DIAG_SQLSTATE);
  absl::StatusCode code = absl::StatusCode::kUnavailable;
  last_sql_state_ = state != nullptr ? state : "";
  if (state != nullptr) {
    code = CodeOfSqlState(state);
  } else if (!Broken()) {
    code = absl::StatusCode::kInternal;
  }
  // A lost connection is Unavailable whatever the server said last.
  if (Broken()) code = absl::StatusCode::kUnavailable;
  std::string message =
      Tidy(r != nullptr ? PQresultErrorMessage(r) : PQerrorMessage(conn_));
  // The detail says which key a unique violation was about.
  const char* detail =
      r == nullptr ? nullptr : PQresultErrorField(r, PG_DIAG_MESSAGE_DETAIL);
  if (detail != nullptr && !absl::StrContains(message, detail)) {
    absl::StrAppend(&message, " ", detail);
  }
  if (last_sql_state_ == "25006") {
    absl::StrAppend(&message,
                    " (the database takes no writes: a standby, or "
                    "default_transaction_read_only set on the database or "
                    "the role)");
  }
  // The statement's first words say which step failed, not its values.
  return absl::Status(code, absl::StrCat(where_, ": ", message, " (in \"",
                                         sql.substr(0, 40), "...\")"));
}

}  // namespace postgres_internal
}  // namespace delayq
