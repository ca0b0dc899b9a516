// Copyright delayq authors.
//
// The history of a flow's jobs (JobOptions::after, batches) on one SQLite
// file, as another process reads it: the steps in which the store settled
// a dependant or a batch's completion job are in the event log, told by
// the scheduler whose call made them.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "delayq/delayq.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_path.h"

namespace delayq {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

const absl::Time kStart = absl::FromUnixSeconds(1'700'000'000);

std::unique_ptr<Scheduler> OpenOn(const std::string& path, Clock* clock,
                                  absl::string_view name) {
  SqliteOptions sqlite;
  sqlite.path = path;
  absl::StatusOr<std::unique_ptr<Backend>> backend = OpenSqliteBackend(sqlite);
  EXPECT_TRUE(backend.ok()) << backend.status();
  SchedulerOptions options;
  options.clock = clock;
  options.name = std::string(name);
  absl::StatusOr<std::unique_ptr<Scheduler>> scheduler =
      Scheduler::Create(*std::move(backend), options);
  EXPECT_TRUE(scheduler.ok()) << scheduler.status();
  return scheduler.ok() ? *std::move(scheduler) : nullptr;
}

// "event by who" of each logged event of `id`, oldest first.
std::vector<std::string> History(Scheduler& reader, absl::string_view id) {
  absl::StatusOr<std::vector<LoggedEvent>> events =
      reader.backend().JobEvents(id, 100);
  EXPECT_TRUE(events.ok()) << events.status();
  std::vector<std::string> out;
  if (!events.ok()) return out;
  for (const LoggedEvent& e : *events) {
    out.push_back(absl::StrCat(EventTypeName(e.type), " by ", e.who));
  }
  return out;
}

std::string ErrorOf(Scheduler& reader, absl::string_view id, EventType type) {
  absl::StatusOr<std::vector<LoggedEvent>> events =
      reader.backend().JobEvents(id, 100);
  if (!events.ok()) return "";
  for (const LoggedEvent& e : *events) {
    if (e.type == type) return e.error;
  }
  return "";
}

Lease Take(Scheduler& scheduler, absl::string_view topic) {
  absl::StatusOr<std::optional<Lease>> lease = scheduler.Reserve(topic);
  EXPECT_TRUE(lease.ok()) << lease.status();
  EXPECT_TRUE(lease.ok() && lease->has_value()) << "nothing in " << topic;
  return lease.ok() && lease->has_value() ? **lease : Lease();
}

TEST(SqliteFlowHistoryTest, AnotherProcessReadsWhatTheStoreSettled) {
  const std::string path = testing::FreshDbPath("flow-history");
  SimulatedClock clock(kStart);
  std::unique_ptr<Scheduler> worker = OpenOn(path, &clock, "worker");
  std::unique_ptr<Scheduler> reader = OpenOn(path, &clock, "reader");
  ASSERT_NE(worker, nullptr);
  ASSERT_NE(reader, nullptr);

  JobOptions render;
  render.id = "render";
  ASSERT_OK(worker->Enqueue("render", "r", render).status());
  JobOptions upload;
  upload.id = "upload";
  upload.max_attempts = 1;
  ASSERT_OK(worker->Enqueue("upload", "u", upload).status());
  JobOptions mail;
  mail.id = "mail";
  mail.after = {"render"};
  ASSERT_OK(worker->Enqueue("mail", "m", mail).status());
  JobOptions publish;
  publish.id = "publish";
  publish.after = {"upload"};
  ASSERT_OK(worker->Enqueue("publish", "p", publish).status());
  JobOptions notify;
  notify.id = "notify";
  notify.after = {"upload"};
  notify.on_dependency_failure = DependencyFailure::kCancel;
  ASSERT_OK(worker->Enqueue("notify", "n", notify).status());
  JobOptions done;
  done.id = "all-done";
  ASSERT_OK(worker->OpenBatch("report", "{}", done).status());
  JobOptions part;
  part.id = "part";
  part.batch = "all-done";
  ASSERT_OK(worker->Enqueue("parts", "1", part).status());
  ASSERT_OK(worker->CloseBatch("all-done"));

  ASSERT_OK(worker->Ack(Take(*worker, "render")));
  ASSERT_OK(worker->Fail(Take(*worker, "upload"), "disk full"));
  ASSERT_OK(worker->Ack(Take(*worker, "parts")));
  ASSERT_OK(worker->FlushEventLog());

  EXPECT_THAT(History(*reader, "mail"),
              ElementsAre("enqueued by worker", "unblocked by worker"));
  EXPECT_THAT(History(*reader, "publish"),
              ElementsAre("enqueued by worker", "dead by worker"));
  EXPECT_THAT(ErrorOf(*reader, "publish", EventType::kDead),
              HasSubstr("'upload'"));
  EXPECT_THAT(History(*reader, "notify"),
              ElementsAre("enqueued by worker", "cancelled by worker"));
  EXPECT_THAT(History(*reader, "all-done"),
              ElementsAre("enqueued by worker", "unblocked by worker"));

  // The reader takes the released jobs on; their histories go on.
  ASSERT_OK(reader->Ack(Take(*reader, "mail")));
  ASSERT_OK(reader->FlushEventLog());
  EXPECT_THAT(History(*reader, "mail"),
              ElementsAre("enqueued by worker", "unblocked by worker",
                          "reserved by reader", "succeeded by reader"));
}

}  // namespace
}  // namespace delayq
