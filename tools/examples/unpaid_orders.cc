// Copyright delayq authors.
//
// unpaid_orders — "cancel this unpaid order after a timeout", end to end.
//
// Every order gets a timeout job when it is placed. Most customers pay in
// time, which cancels the job; the rest time out, and a handler cancels the
// order. The program prints progress while it runs and ends with a summary:
// how many orders were paid and cancelled, whether any paid order was wrongly
// cancelled or any unpaid one forgotten, and how late the timeouts fired.
//
// A few orders get a timeout a day away and stay in the store when the
// program ends. On a durable store the next run finds them (they survived
// the restart) and pays them.
//
//   bazel run -c opt //tools/examples:unpaid_orders -- --orders=3000

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "delayq/delayq.h"

ABSL_FLAG(std::string, store, "sqlite:unpaid_orders.db",
          "where jobs live: memory:, sqlite:PATH or redis://HOST:PORT");
ABSL_FLAG(int, orders, 3000, "orders to place");
ABSL_FLAG(absl::Duration, min_timeout, absl::Seconds(2),
          "shortest payment timeout");
ABSL_FLAG(absl::Duration, max_timeout, absl::Seconds(5),
          "longest payment timeout");
ABSL_FLAG(double, paid_fraction, 0.8, "share of customers who pay in time");
ABSL_FLAG(int, workers, 4, "handler threads cancelling timed-out orders");
ABSL_FLAG(int, keep, 20,
          "orders left waiting with a one-day timeout, for the next run");

namespace {

constexpr char kTopic[] = "orders.expire";
constexpr char kKeptPrefix[] = "kept-order-";

struct Order {
  std::string id;
  absl::Duration timeout;
  bool pays;
  absl::Duration pays_after;  // only when `pays`
};

// What happened to the orders, shared by the handler, the payer and main.
class Ledger {
 public:
  void Expired(const delayq::Job& job, absl::Time now) {
    absl::MutexLock lock(&mu_);
    if (!expected_.contains(job.id)) {
      ++expired_foreign_;  // left by an earlier run and due meanwhile
      return;
    }
    if (paid_.contains(job.id)) ++wrongly_cancelled_;
    if (!expired_.insert(job.id).second) ++duplicates_;
    lateness_ms_.push_back(absl::ToDoubleMilliseconds(now - job.run_at));
  }
  void Paid(const std::string& id) {
    absl::MutexLock lock(&mu_);
    paid_.insert(id);
  }
  void PaidTooLate() {
    absl::MutexLock lock(&mu_);
    ++paid_too_late_;
  }
  void Expect(const std::string& id) {
    absl::MutexLock lock(&mu_);
    expected_.insert(id);
  }

  size_t expired() {
    absl::MutexLock lock(&mu_);
    return expired_.size();
  }
  // Orders that reached an end: paid in time or timed out.
  size_t settled() {
    absl::MutexLock lock(&mu_);
    return paid_.size() + expired_.size();
  }
  size_t paid() {
    absl::MutexLock lock(&mu_);
    return paid_.size();
  }

  // Returns false when something went wrong.
  bool PrintSummary(size_t unpaid);

 private:
  absl::Mutex mu_;
  absl::flat_hash_set<std::string> expected_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_set<std::string> paid_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_set<std::string> expired_ ABSL_GUARDED_BY(mu_);
  std::vector<double> lateness_ms_ ABSL_GUARDED_BY(mu_);
  int paid_too_late_ ABSL_GUARDED_BY(mu_) = 0;
  int wrongly_cancelled_ ABSL_GUARDED_BY(mu_) = 0;
  int duplicates_ ABSL_GUARDED_BY(mu_) = 0;
  int expired_foreign_ ABSL_GUARDED_BY(mu_) = 0;
};

double Percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t i =
      std::min(values.size() - 1, static_cast<size_t>(p / 100 * values.size()));
  return values[i];
}

bool Ledger::PrintSummary(size_t unpaid) {
  absl::MutexLock lock(&mu_);
  // Every order ends exactly one way: paid in time, or timed out.
  const size_t settled = paid_.size() + expired_.size() - wrongly_cancelled_;
  const size_t missing = expected_.size() - std::min(expected_.size(), settled);
  std::printf("\nSummary\n");
  std::printf("  orders placed             %zu (%zu never pay)\n",
              expected_.size(), unpaid);
  std::printf("  paid in time              %zu (timeout job cancelled)\n",
              paid_.size());
  std::printf("  paid too late             %d (the timeout came first)\n",
              paid_too_late_);
  std::printf("  timed out                 %zu (order cancelled by handler)\n",
              expired_.size());
  if (expired_foreign_ > 0) {
    std::printf("  timed out from a previous run  %d\n", expired_foreign_);
  }
  std::printf("  paid but cancelled        %d\n", wrongly_cancelled_);
  std::printf("  handled twice             %d\n", duplicates_);
  std::printf("  never handled             %zu\n", missing);
  std::printf(
      "  timeout lateness          p50 %.1f ms   p99 %.1f ms   max %.1f ms\n",
      Percentile(lateness_ms_, 50), Percentile(lateness_ms_, 99),
      Percentile(lateness_ms_, 100));
  const bool ok = wrongly_cancelled_ == 0 && duplicates_ == 0 && missing == 0;
  std::printf(
      "  result                    %s\n",
      ok ? "OK: every unpaid order was cancelled exactly once" : "FAILED");
  return ok;
}

std::vector<Order> PlanOrders(const std::string& run) {
  absl::BitGen gen;
  const absl::Duration lo = absl::GetFlag(FLAGS_min_timeout);
  const absl::Duration hi = std::max(lo, absl::GetFlag(FLAGS_max_timeout));
  std::vector<Order> orders(absl::GetFlag(FLAGS_orders));
  for (size_t i = 0; i < orders.size(); ++i) {
    Order& o = orders[i];
    o.id = absl::StrCat("order-", run, "-", i);
    o.timeout = lo + (hi - lo) * absl::Uniform(gen, 0.0, 1.0);
    o.pays = absl::Bernoulli(gen, absl::GetFlag(FLAGS_paid_fraction));
    // Payers pay somewhere in the first 90% of their window.
    o.pays_after = o.timeout * absl::Uniform(gen, 0.0, 0.9);
  }
  return orders;
}

// Pays the orders of `orders` that pay, each at its time: cancelling the
// timeout job is what "paid" means to the store.
void PayOrders(delayq::Scheduler& scheduler, std::vector<Order> orders,
               absl::Time placed, Ledger& ledger) {
  std::sort(orders.begin(), orders.end(), [](const Order& a, const Order& b) {
    return a.pays_after < b.pays_after;
  });
  for (const Order& o : orders) {
    if (!o.pays) continue;
    scheduler.clock().SleepUntil(placed + o.pays_after);
    absl::Status s = scheduler.Cancel(o.id);
    if (s.ok()) {
      ledger.Paid(o.id);
    } else if (absl::IsNotFound(s)) {
      ledger.PaidTooLate();  // the timeout won the race
    } else {
      std::fprintf(stderr, "cancel %s: %s\n", o.id.c_str(),
                   s.ToString().c_str());
    }
  }
}

// Pays the long-timeout orders an earlier run left, proving they survived.
void PayLeftovers(delayq::Scheduler& scheduler) {
  absl::StatusOr<std::vector<delayq::Job>> kept =
      scheduler.List(kTopic, delayq::JobState::kDelayed, 100000);
  if (!kept.ok()) return;
  int survived = 0;
  for (const delayq::Job& job : *kept) {
    if (job.id.rfind(kKeptPrefix, 0) != 0) continue;
    if (scheduler.Cancel(job.id).ok()) ++survived;
  }
  if (survived > 0) {
    std::printf(
        "Found %d orders from an earlier run still waiting for "
        "payment in the store: they survived the restart. Paid "
        "them.\n",
        survived);
  }
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "Places orders with payment timeouts; unpaid ones are cancelled by a "
      "delayq handler.");
  absl::ParseCommandLine(argc, argv);
  // Under `bazel run`, resolve relative store paths where the user stands.
  if (const char* dir = std::getenv("BUILD_WORKING_DIRECTORY")) {
    if (chdir(dir) != 0) std::perror("chdir");
  }
  const std::string store = absl::GetFlag(FLAGS_store);

  absl::StatusOr<std::unique_ptr<delayq::Backend>> backend =
      delayq::OpenBackend(store);
  if (!backend.ok()) {
    std::fprintf(stderr, "cannot open %s: %s\n", store.c_str(),
                 backend.status().ToString().c_str());
    return 1;
  }
  absl::StatusOr<std::unique_ptr<delayq::Scheduler>> created =
      delayq::Scheduler::Create(*std::move(backend));
  if (!created.ok()) {
    std::fprintf(stderr, "cannot start: %s\n",
                 created.status().ToString().c_str());
    return 1;
  }
  delayq::Scheduler& scheduler = **created;
  std::printf("Store: %s\n", store.c_str());
  PayLeftovers(scheduler);

  const std::string run = absl::StrFormat(
      "%x", absl::ToUnixMillis(scheduler.clock().Now()) & 0xffffffff);
  std::vector<Order> orders = PlanOrders(run);
  Ledger ledger;
  delayq::HandlerOptions handler_options;
  handler_options.concurrency = absl::GetFlag(FLAGS_workers);
  scheduler.Handle(
      kTopic,
      [&](const delayq::Job& job) {
        ledger.Expired(job, scheduler.clock().Now());
        return absl::OkStatus();  // "order cancelled"
      },
      handler_options);
  if (absl::Status s = scheduler.Start(); !s.ok()) {
    std::fprintf(stderr, "cannot start workers: %s\n", s.ToString().c_str());
    return 1;
  }

  const absl::Time placed = scheduler.clock().Now();
  size_t should_expire = 0;
  for (const Order& o : orders) {
    delayq::JobOptions options;
    options.id = o.id;
    options.delay = o.timeout;
    ledger.Expect(o.id);
    if (absl::Status s = scheduler.Enqueue(kTopic, o.id, options).status();
        !s.ok()) {
      std::fprintf(stderr, "enqueue %s: %s\n", o.id.c_str(),
                   s.ToString().c_str());
      return 1;
    }
    if (!o.pays) ++should_expire;
  }
  // A memory store dies with the process; there is nothing to keep.
  const int keep =
      store.rfind("memory", 0) == 0 ? 0 : absl::GetFlag(FLAGS_keep);
  for (int i = 0; i < keep; ++i) {
    delayq::JobOptions options;
    options.id = absl::StrCat(kKeptPrefix, run, "-", i);
    options.delay = absl::Hours(24);
    scheduler.Enqueue(kTopic, options.id, options).status().IgnoreError();
  }
  std::printf("Placed %zu orders (timeouts %s to %s); %zu will not pay.\n",
              orders.size(),
              absl::FormatDuration(absl::GetFlag(FLAGS_min_timeout)).c_str(),
              absl::FormatDuration(absl::GetFlag(FLAGS_max_timeout)).c_str(),
              should_expire);

  std::thread payer(PayOrders, std::ref(scheduler), orders, placed,
                    std::ref(ledger));
  const absl::Time give_up =
      placed + absl::GetFlag(FLAGS_max_timeout) + absl::Seconds(30);
  for (;;) {
    absl::SleepFor(absl::Milliseconds(500));
    const absl::Time now = scheduler.clock().Now();
    const size_t settled = ledger.settled();
    std::printf("  %5.1f s   paid %5zu   timed out %5zu   open %5zu\n",
                absl::ToDoubleSeconds(now - placed), ledger.paid(),
                ledger.expired(), orders.size() - settled);
    std::fflush(stdout);
    if (settled >= orders.size() || now > give_up) break;
  }
  payer.join();
  scheduler.Stop(absl::Seconds(5));
  if (absl::GetFlag(FLAGS_keep) > 0) {
    std::printf(
        "\nLeft %d orders with a one-day timeout in %s for the next "
        "run.\n",
        absl::GetFlag(FLAGS_keep), store.c_str());
  }
  return ledger.PrintSummary(should_expire) ? 0 : 1;
}
