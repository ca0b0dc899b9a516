// Copyright delayq authors.
//
// The PostgreSQL store's event log (delayq/event_log.h): a batch is one
// INSERT of arrays (unnest) and one trim, in one transaction; a job's
// events are one indexed read. See schema.cc for the table.

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "backends/postgres/internal/backend_impl.h"
#include "backends/postgres/internal/statements.h"
#include "src/common/status_macros.h"

namespace delayq {
namespace postgres_internal {

absl::Status PostgresBackend::AppendEvents(
    absl::Span<const LoggedEvent> events) {
  if (events.empty() || events_options_.max_events <= 0) {
    return absl::OkStatus();
  }
  std::vector<std::string> ids, topics, types, errors, who;
  std::vector<std::optional<int64_t>> at, attempts;
  for (const LoggedEvent& e : events) {
    ids.push_back(e.id);
    topics.push_back(e.topic);
    types.push_back(std::string(EventTypeName(e.type)));
    at.push_back(absl::ToUnixMicros(e.at));
    attempts.push_back(e.attempts);
    errors.push_back(TextForStore(e.error));
    who.push_back(TextForStore(e.who));
  }
  return Transaction(events.back().at, [&](Tx& tx) -> absl::Status {
    DQ_RETURN_IF_ERROR(
        tx.conn->Run(S(Sql::kEventsInsert), Params()
                                                .TextArray(ids)
                                                .TextArray(topics)
                                                .TextArray(types)
                                                .IntArray(at)
                                                .IntArray(attempts)
                                                .TextArray(errors)
                                                .TextArray(who)));
    return tx.conn->Run(S(Sql::kEventsTrim),
                        Params().Int(events_options_.max_events));
  });
}

absl::StatusOr<std::vector<LoggedEvent>> PostgresBackend::JobEvents(
    absl::string_view id, int limit) {
  std::vector<LoggedEvent> found;
  DQ_RETURN_IF_ERROR(Read([&](Connection& conn) -> absl::Status {
    DQ_ASSIGN_OR_RETURN(Result r, conn.Exec(S(Sql::kEventsOfJob),
                                            Params().Text(id).Int(limit)));
    found.clear();
    for (int i = 0; i < r.rows(); ++i) {
      LoggedEvent e;
      // A type this build does not know (a newer one wrote it) is skipped.
      if (!EventTypeFromName(r.Text(i, 0), &e.type)) continue;
      e.id = std::string(id);
      e.topic = r.Text(i, 1);
      e.at = absl::FromUnixMicros(r.Int(i, 2));
      e.attempts = static_cast<int>(r.Int(i, 3));
      e.error = r.Text(i, 4);
      e.who = r.Text(i, 5);
      found.push_back(std::move(e));
    }
    return absl::OkStatus();
  }));
  return found;
}

}  // namespace postgres_internal
}  // namespace delayq
