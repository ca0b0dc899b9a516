// Copyright delayq authors.
//
// The SQLite store's event log (delayq/event_log.h): an append is one more
// operation of the write transaction that the writes of that moment share
// (group_commit.h), so it costs no transaction of its own. See schema.cc,
// version 12, for the table.

#include <string>
#include <vector>

#include "backends/sqlite/internal/backend_impl.h"
#include "backends/sqlite/internal/db.h"
#include "src/common/status_macros.h"

namespace delayq {
namespace sqlite_internal {

absl::Status SqliteBackend::AppendEvents(absl::Span<const LoggedEvent> events) {
  if (events.empty() || events_options_.max_events <= 0) {
    return absl::OkStatus();
  }
  return WriteTransaction(events.back().at, [&]() -> absl::Status {
    Statement* insert = s_.event_insert.get();
    for (const LoggedEvent& e : events) {
      ScopedReset reset(insert);
      insert->BindText(1, e.id);
      insert->BindText(2, e.topic);
      insert->BindText(3, EventTypeName(e.type));
      insert->BindInt64(4, absl::ToUnixMicros(e.at));
      insert->BindInt64(5, e.attempts);
      insert->BindText(6, e.error);
      insert->BindText(7, e.who);
      DQ_RETURN_IF_ERROR(insert->Run().status());
    }
    ScopedReset reset(s_.event_trim.get());
    s_.event_trim->BindInt64(1, events_options_.max_events);
    return s_.event_trim->Run().status();
  });
}

absl::StatusOr<std::vector<LoggedEvent>> SqliteBackend::JobEvents(
    absl::string_view id, int limit) {
  internal::MutexLock lock(&mu_);
  std::vector<LoggedEvent> found;
  Statement* read = s_.events_of_job.get();
  ScopedReset reset(read);
  read->BindText(1, id);
  read->BindInt64(2, limit);
  while (true) {
    DQ_ASSIGN_OR_RETURN(bool row, read->Step());
    if (!row) break;
    LoggedEvent e;
    // A type this build does not know (a newer one wrote it) is skipped.
    if (!EventTypeFromName(read->Text(0), &e.type)) continue;
    e.id = std::string(id);
    e.topic = read->Text(1);
    e.at = absl::FromUnixMicros(read->Int64(2));
    e.attempts = static_cast<int>(read->Int64(3));
    e.error = read->Text(4);
    e.who = read->Text(5);
    found.push_back(std::move(e));
  }
  return found;
}

}  // namespace sqlite_internal
}  // namespace delayq
