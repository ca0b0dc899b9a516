// Copyright delayq authors.

#include "backends/sqlite/internal/db.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace delayq {
namespace sqlite_internal {
namespace {

constexpr char kSqliteMagic[] = "SQLite format 3";  // + NUL = 16 bytes

// The directory part of `path` ("." for a bare file name).
std::string DirName(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

uint32_t BigEndian32(const char* p) {
  const auto* b = reinterpret_cast<const unsigned char*>(p);
  return (uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) |
         (uint32_t{b[2]} << 8) | uint32_t{b[3]};
}

// Checks what is already at `path` before SQLite sees it, so that a file that
// is not ours is reported clearly and never touched. Sets *exists.
absl::Status CheckExistingFile(const std::string& path, bool* exists) {
  struct stat st;
  *exists = false;
  if (stat(path.c_str(), &st) != 0) {
    if (errno != ENOENT) {
      return absl::FailedPreconditionError(absl::StrCat(
          "sqlite ", path, ": cannot stat: ", std::strerror(errno)));
    }
    struct stat dir_st;
    const std::string dir = DirName(path);
    if (stat(dir.c_str(), &dir_st) != 0 || !S_ISDIR(dir_st.st_mode)) {
      return absl::FailedPreconditionError(absl::StrCat(
          "sqlite ", path, ": directory ", dir, " does not exist"));
    }
    return absl::OkStatus();
  }
  *exists = true;
  if (S_ISDIR(st.st_mode)) {
    return absl::InvalidArgumentError(
        absl::StrCat("sqlite ", path, ": is a directory, not a database file"));
  }
  if (st.st_size == 0) return absl::OkStatus();  // SQLite initialises it
  FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("sqlite ", path, ": cannot read: ", std::strerror(errno)));
  }
  char header[100];
  const size_t n = std::fread(header, 1, sizeof(header), f);
  std::fclose(f);
  if (n < sizeof(kSqliteMagic) ||
      std::memcmp(header, kSqliteMagic, sizeof(kSqliteMagic)) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("sqlite ", path, ": is not a SQLite database"));
  }
  if (n < sizeof(header)) {
    return absl::DataLossError(absl::StrCat(
        "sqlite ", path, ": truncated SQLite file (", n, " bytes)"));
  }
  // The text encoding (header offset 56; 0 until a first table sets it):
  // delayq's statements and its temporary tables are UTF-8, and SQLite
  // will not run them beside a main database of another encoding.
  const uint32_t encoding = BigEndian32(header + 56);
  if (encoding > 1) {
    return absl::FailedPreconditionError(
        absl::StrCat("sqlite ", path, ": the database's text encoding is ",
                     encoding == 2   ? "UTF-16le"
                     : encoding == 3 ? "UTF-16be"
                                     : "unknown",
                     " (", encoding,
                     "); delayq keeps its tables in UTF-8 databases only; "
                     "left untouched"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status StatusFromSqlite(int rc, absl::string_view detail,
                              absl::string_view path, absl::string_view what) {
  std::string message = absl::StrCat("sqlite ", path, ": ", what, ": ", detail);
  if (detail != sqlite3_errstr(rc)) {
    absl::StrAppend(&message, " (", sqlite3_errstr(rc), ")");
  }
  switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return absl::UnavailableError(message);
    case SQLITE_CANTOPEN:
    case SQLITE_IOERR:
    case SQLITE_PROTOCOL:
      return absl::UnavailableError(message);
    case SQLITE_FULL:
    case SQLITE_NOMEM:
      return absl::ResourceExhaustedError(message);
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      return absl::DataLossError(message);
    case SQLITE_READONLY:
    case SQLITE_PERM:
    case SQLITE_AUTH:
      return absl::FailedPreconditionError(message);
    case SQLITE_CONSTRAINT:
      return absl::AlreadyExistsError(message);
    default:
      return absl::InternalError(message);
  }
}

int64_t ToMicros(absl::Time t) {
  // absl saturates at the int64 range for the infinite times.
  return absl::ToUnixMicros(t);
}

absl::Time FromMicros(int64_t us) {
  if (us == std::numeric_limits<int64_t>::max()) return absl::InfiniteFuture();
  if (us == std::numeric_limits<int64_t>::min()) return absl::InfinitePast();
  return absl::FromUnixMicros(us);
}

Statement::~Statement() { sqlite3_finalize(stmt_); }

void Statement::BindInt64(int i, int64_t v) { sqlite3_bind_int64(stmt_, i, v); }

void Statement::BindText(int i, absl::string_view v) {
  sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()),
                    SQLITE_TRANSIENT);
}

void Statement::BindBlob(int i, absl::string_view v) {
  // A zero-length blob must not bind as NULL (data() may be null).
  sqlite3_bind_blob(stmt_, i, v.empty() ? "" : v.data(),
                    static_cast<int>(v.size()), SQLITE_TRANSIENT);
}

void Statement::BindNull(int i) { sqlite3_bind_null(stmt_, i); }

absl::StatusOr<bool> Statement::Step() {
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return conn_->Error(rc, sqlite3_sql(stmt_));
}

absl::StatusOr<int> Statement::Run() {
  while (true) {
    absl::StatusOr<bool> row = Step();
    if (!row.ok()) return row.status();
    if (!*row) break;
  }
  return static_cast<int>(conn_->Changes());
}

bool Statement::IsNull(int col) const {
  return sqlite3_column_type(stmt_, col) == SQLITE_NULL;
}

int64_t Statement::Int64(int col) const {
  return sqlite3_column_int64(stmt_, col);
}

std::string Statement::Text(int col) const {
  const void* data = sqlite3_column_blob(stmt_, col);
  const int size = sqlite3_column_bytes(stmt_, col);
  if (data == nullptr) return std::string();
  return std::string(static_cast<const char*>(data), size);
}

void Statement::Reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

absl::StatusOr<std::unique_ptr<Connection>> Connection::Open(
    const std::string& path, absl::Duration busy_timeout) {
  bool exists = false;
  const absl::Status checked = CheckExistingFile(path, &exists);
  if (!checked.ok()) return checked;
  if (!exists) {
    // Made here rather than by SQLite, which would make it 0644, readable
    // by every local user: 0600 (less if the umask asks). SQLite gives the
    // -wal and -shm files the same mode. Another process may create it
    // first; then that one's file is opened.
    const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC,
                        S_IRUSR | S_IWUSR);
    if (fd >= 0) {
      close(fd);
    } else if (errno != EEXIST) {
      return absl::FailedPreconditionError(absl::StrCat(
          "sqlite ", path,
          ": cannot create the database file: ", std::strerror(errno)));
    }
  }
  sqlite3* db = nullptr;
  // NOMUTEX: the Backend serialises calls on a connection itself.
  const int rc = sqlite3_open_v2(
      path.c_str(), &db,
      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
      nullptr);
  if (rc != SQLITE_OK) {
    const int sys_errno = db != nullptr ? sqlite3_system_errno(db) : 0;
    std::string detail =
        db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    sqlite3_close_v2(db);
    if (sys_errno != 0) {
      absl::StrAppend(&detail, ": ", std::strerror(sys_errno));
    }
    // The directory exists (checked above): a file that cannot be created
    // there is a location the caller must fix, not a passing outage.
    if ((rc & 0xff) == SQLITE_CANTOPEN &&
        (!exists || sys_errno == EACCES || sys_errno == EPERM ||
         sys_errno == EROFS)) {
      return absl::FailedPreconditionError(
          absl::StrCat("sqlite ", path, ": cannot ", exists ? "open" : "create",
                       " the database file: ", detail));
    }
    return StatusFromSqlite(rc, detail, path, "open");
  }
  std::unique_ptr<Connection> conn(new Connection(db, path, busy_timeout));
  sqlite3_extended_result_codes(db, 1);
  sqlite3_busy_handler(db, &Connection::OnBusy, conn.get());
  if (sqlite3_db_readonly(db, "main") == 1) {
    return absl::FailedPreconditionError(
        absl::StrCat("sqlite ", path, ": file is read-only"));
  }
  return conn;
}

std::unique_ptr<Connection> Connection::Borrow(sqlite3* db, std::string path) {
  return std::unique_ptr<Connection>(new Connection(
      db, std::move(path), absl::ZeroDuration(), /*owned=*/false));
}

Connection::~Connection() {
  if (owned_) sqlite3_close_v2(db_);
}

int Connection::OnBusy(void* connection, int count) {
  auto* conn = static_cast<Connection*>(connection);
  // A steady clock: this measures a wait, not a job's time.
  const int64_t now_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(
          std::chrono::steady_clock::now().time_since_epoch())
          .count();
  if (count == 0) conn->busy_since_ns_ = now_ns;
  const absl::Duration waited =
      absl::Nanoseconds(now_ns - conn->busy_since_ns_);
  if (waited >= conn->busy_timeout_) return 0;  // SQLITE_BUSY to the caller
  const absl::Duration nap =
      std::min(absl::Microseconds(20) * (int64_t{1} << std::min(count, 6)),
               absl::Milliseconds(1));
  absl::SleepFor(std::min(nap, conn->busy_timeout_ - waited));
  return 1;
}

absl::StatusOr<std::unique_ptr<Statement>> Connection::Prepare(
    absl::string_view sql) {
  sqlite3_stmt* stmt = nullptr;
  const int rc =
      sqlite3_prepare_v3(db_, sql.data(), static_cast<int>(sql.size()),
                         SQLITE_PREPARE_PERSISTENT, &stmt, nullptr);
  if (rc != SQLITE_OK) {
    sqlite3_finalize(stmt);
    return Error(rc, absl::StrCat("prepare ", sql));
  }
  return std::make_unique<Statement>(this, stmt);
}

absl::Status Connection::Exec(absl::string_view sql, absl::string_view what) {
  const std::string text(sql);
  const int rc = sqlite3_exec(db_, text.c_str(), nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) return Error(rc, what);
  return absl::OkStatus();
}

absl::Status Connection::Error(int rc, absl::string_view what) const {
  return StatusFromSqlite(rc, sqlite3_errmsg(db_), path_, what);
}

void Connection::Rollback() {
  if (!sqlite3_get_autocommit(db_)) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  }
}

}  // namespace sqlite_internal
}  // namespace delayq
