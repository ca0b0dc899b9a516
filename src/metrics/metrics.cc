// Copyright delayq authors.

#include "delayq/metrics.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "delayq/version.h"
#include "src/metrics/instrumented_backend.h"
#include "src/metrics/metrics_histogram.h"

namespace delayq {
namespace {

// A label value, escaped as the text format wants.
std::string Label(absl::string_view value) {
  std::string out;
  for (const char c : value) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

// Whether a failed store call means the store is in trouble (unreachable,
// slow, damaged), not that it refused the caller as the contract says.
bool IsStoreTrouble(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kAlreadyExists:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kUnimplemented:
      return false;
    default:
      return true;
  }
}

void Header(absl::string_view name, absl::string_view type,
            absl::string_view help, std::string* out) {
  absl::StrAppend(out, "# HELP ", name, " ", help, "\n# TYPE ", name, " ", type,
                  "\n");
}

}  // namespace

class Metrics::State {
 public:
  State(Clock& clock, absl::Duration topic_idle)
      : clock(clock), topic_idle(topic_idle) {}

  // Counts `events` under one lock.
  void RecordAll(absl::Span<const Event> events);
  void ObserveCall(absl::string_view call, absl::Duration took,
                   const absl::Status& status);
  std::string Render();

  Clock& clock;
  const absl::Duration topic_idle;
  Scheduler* scheduler = nullptr;
  int listener = -1;

 private:
  // A histogram per topic or per call, found by its name.
  using Family = std::map<std::string, internal::Histogram, std::less<>>;
  // The family's histogram for `key`, made with `bounds()` when new. Only
  // then: the bounds are a vector, and this runs for every job.
  static internal::Histogram& HistogramOf(Family& family, absl::string_view key,
                                          std::vector<double> (*bounds)()) {
    auto it = family.find(key);
    if (it == family.end()) {
      it = family.try_emplace(std::string(key), bounds()).first;
    }
    return it->second;
  }
  internal::Histogram& JobHistogram(Family& family, absl::string_view topic)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return HistogramOf(family, topic, &internal::JobSecondsBounds);
  }
  void RenderGauges(std::string* out);
  // The store's counts (counts.h) of the topics in `names` and of those
  // counted in the last topic_idle; nothing on a store that keeps none.
  void RenderStoreCounts(const std::set<std::string>& names, std::string* out);
  // What alerts watch besides the counts: how long the next ready job of
  // each topic in `ready` has been due, the limits, the schedules' runs.
  void RenderWatchGauges(const std::set<std::string>& ready,
                         const std::vector<LimitedTopic>& limits,
                         std::string* out);
  // Drops the series of the topics that are not in `live` and had no event
  // for topic_idle.
  void ForgetIdleTopics(const std::set<std::string>& live)
      ABSL_LOCKS_EXCLUDED(mu_);
  void Count(const Event& e) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  absl::Mutex mu_;
  // topic -> event -> count, in the text's order. Both levels are found by
  // string_view, so counting a pair seen before allocates nothing.
  std::map<std::string, std::map<std::string, int64_t, std::less<>>,
           std::less<>>
      events_ ABSL_GUARDED_BY(mu_);
  Family lateness_ ABSL_GUARDED_BY(mu_);
  Family run_time_ ABSL_GUARDED_BY(mu_);
  // topic -> when this process last saw one of its events.
  std::map<std::string, absl::Time, std::less<>> last_event_
      ABSL_GUARDED_BY(mu_);
  Family calls_ ABSL_GUARDED_BY(mu_);
  // (call, code) -> count: calls the store could not answer, and calls it
  // answered with a refusal the contract gives (an unknown id, a stale
  // lease, a taken id: the caller's doing, not the store's).
  std::map<std::pair<std::string, std::string>, int64_t> call_errors_
      ABSL_GUARDED_BY(mu_);
  std::map<std::pair<std::string, std::string>, int64_t> call_refusals_
      ABSL_GUARDED_BY(mu_);
  int64_t gauge_errors_ ABSL_GUARDED_BY(mu_) = 0;
};

void Metrics::State::RecordAll(absl::Span<const Event> events) {
  if (events.empty()) return;
  const absl::Time now = clock.Now();
  absl::MutexLock lock(&mu_);
  for (const Event& e : events) {
    Count(e);
    auto seen = last_event_.find(e.topic);
    if (seen == last_event_.end()) {
      seen = last_event_.try_emplace(e.topic).first;
    }
    seen->second = now;
  }
}

void Metrics::State::Count(const Event& e) {
  auto topic = events_.find(e.topic);
  if (topic == events_.end()) topic = events_.try_emplace(e.topic).first;
  const absl::string_view name = EventTypeName(e.type);
  auto count = topic->second.find(name);
  if (count == topic->second.end()) {
    count = topic->second.try_emplace(std::string(name), 0).first;
  }
  ++count->second;
  switch (e.type) {
    case EventType::kReserved:
      if (e.attempts == 1 && e.due != absl::InfinitePast()) {
        JobHistogram(lateness_, e.topic)
            .Observe(absl::ToDoubleSeconds(
                std::max(e.at - e.due, absl::ZeroDuration())));
      }
      break;
    case EventType::kSucceeded:
    case EventType::kFailed:
      // The lease says when it began (Lease::reserved_at), so nothing here
      // remembers every lease in flight.
      if (e.reserved_at != absl::InfinitePast()) {
        JobHistogram(run_time_, e.topic)
            .Observe(absl::ToDoubleSeconds(
                std::max(e.at - e.reserved_at, absl::ZeroDuration())));
      }
      break;
    default:
      break;
  }
}

void Metrics::State::ObserveCall(absl::string_view call, absl::Duration took,
                                 const absl::Status& status) {
  absl::MutexLock lock(&mu_);
  HistogramOf(calls_, call, &internal::StoreCallSecondsBounds)
      .Observe(absl::ToDoubleSeconds(took));
  if (!status.ok()) {
    auto& counts = IsStoreTrouble(status) ? call_errors_ : call_refusals_;
    ++counts[{std::string(call), absl::StatusCodeToString(status.code())}];
  }
}

// The topics' counts, read from the store outside the lock (a slow store
// must not stall the recording of events).
void Metrics::State::RenderGauges(std::string* out) {
  if (scheduler == nullptr) return;
  absl::StatusOr<std::vector<std::string>> topics = scheduler->Topics();
  absl::StatusOr<std::vector<std::string>> paused = scheduler->PausedTopics();
  absl::StatusOr<std::vector<LimitedTopic>> limits = scheduler->Limits();
  if (!topics.ok() ||
      (!paused.ok() && !absl::IsUnimplemented(paused.status())) ||
      (!limits.ok() && !absl::IsUnimplemented(limits.status()))) {
    absl::MutexLock lock(&mu_);
    ++gauge_errors_;
    return;
  }
  std::set<std::string> paused_set;
  if (paused.ok()) paused_set.insert(paused->begin(), paused->end());
  // The topics the store has: with jobs, paused or limited.
  std::set<std::string> names(topics->begin(), topics->end());
  names.insert(paused_set.begin(), paused_set.end());
  if (limits.ok()) {
    for (const LimitedTopic& l : *limits) names.insert(l.topic);
  }
  ForgetIdleTopics(names);
  std::string jobs, paused_lines;
  std::set<std::string> with_ready;
  for (const std::string& topic : names) {
    absl::StatusOr<TopicStats> s = scheduler->Stats(topic);
    if (!s.ok()) {
      absl::MutexLock lock(&mu_);
      ++gauge_errors_;
      continue;
    }
    if (s->ready > 0) with_ready.insert(topic);
    const std::string t = Label(topic);
    const std::pair<const char*, int64_t> states[] = {{"delayed", s->delayed},
                                                      {"ready", s->ready},
                                                      {"reserved", s->reserved},
                                                      {"dead", s->dead}};
    for (const auto& [state, n] : states) {
      absl::StrAppend(&jobs, "delayq_jobs{topic=\"", t, "\",state=\"", state,
                      "\"} ", n, "\n");
    }
    absl::StrAppend(&paused_lines, "delayq_topic_paused{topic=\"", t, "\"} ",
                    paused_set.count(topic) ? 1 : 0, "\n");
  }
  Header("delayq_jobs", "gauge", "Jobs in the store, per topic and state.",
         out);
  absl::StrAppend(out, jobs);
  Header("delayq_topic_paused", "gauge", "1 while the topic is paused.", out);
  absl::StrAppend(out, paused_lines);
  RenderWatchGauges(with_ready,
                    limits.ok() ? *limits : std::vector<LimitedTopic>(), out);
  RenderStoreCounts(names, out);
}

void Metrics::State::RenderWatchGauges(const std::set<std::string>& ready,
                                       const std::vector<LimitedTopic>& limits,
                                       std::string* out) {
  const absl::Time now = scheduler->clock().Now();
  Header("delayq_ready_job_age_seconds", "gauge",
         "How long the topic's next ready job (in ready order) has been due.",
         out);
  for (const std::string& topic : ready) {
    absl::StatusOr<std::vector<Job>> next =
        scheduler->List(topic, JobState::kReady, 1);
    if (!next.ok() || next->empty()) continue;
    absl::StrAppend(out, "delayq_ready_job_age_seconds{topic=\"", Label(topic),
                    "\"} ",
                    absl::ToDoubleSeconds(std::max(now - next->front().run_at,
                                                   absl::ZeroDuration())),
                    "\n");
  }
  Header("delayq_topic_limit_rate", "gauge",
         "The topic's limit: reservations allowed per second (0: none).", out);
  for (const LimitedTopic& l : limits) {
    const double per_second =
        l.limit.rate > 0 ? l.limit.rate / absl::ToDoubleSeconds(l.limit.period)
                         : 0;
    absl::StrAppend(out, "delayq_topic_limit_rate{topic=\"", Label(l.topic),
                    "\"} ", per_second, "\n");
  }
  Header("delayq_topic_limit_concurrency", "gauge",
         "The topic's limit: reservations at once (0: no cap).", out);
  for (const LimitedTopic& l : limits) {
    absl::StrAppend(out, "delayq_topic_limit_concurrency{topic=\"",
                    Label(l.topic), "\"} ", l.limit.concurrency, "\n");
  }
  absl::StatusOr<std::vector<ScheduleInfo>> schedules = scheduler->Schedules();
  if (!schedules.ok()) {
    if (!absl::IsUnimplemented(schedules.status())) {
      absl::MutexLock lock(&mu_);
      ++gauge_errors_;
    }
    return;
  }
  std::string last, next;
  for (const ScheduleInfo& s : *schedules) {
    const std::string name = Label(s.record.name);
    absl::StrAppend(&last, "delayq_schedule_last_run_timestamp_seconds{",
                    "schedule=\"", name, "\"} ",
                    absl::ToUnixSeconds(s.record.done_through), "\n");
    if (s.next_run == absl::InfiniteFuture()) continue;
    absl::StrAppend(&next, "delayq_schedule_next_run_timestamp_seconds{",
                    "schedule=\"", name, "\"} ",
                    absl::ToUnixSeconds(s.next_run), "\n");
  }
  Header("delayq_schedule_last_run_timestamp_seconds", "gauge",
         "The schedule's occurrences are enqueued up to this time (Unix s).",
         out);
  absl::StrAppend(out, last);
  Header("delayq_schedule_next_run_timestamp_seconds", "gauge",
         "The schedule's next occurrence (Unix s).", out);
  absl::StrAppend(out, next);
}

void Metrics::State::RenderStoreCounts(const std::set<std::string>& names,
                                       std::string* out) {
  absl::StatusOr<std::vector<TopicTotals>> totals = scheduler->CountTotals();
  if (absl::IsUnimplemented(totals.status())) return;
  absl::StatusOr<std::vector<TopicTotals>> recent =
      scheduler->RecentCounts(topic_idle);
  if (!totals.ok() || !recent.ok()) {
    absl::MutexLock lock(&mu_);
    ++gauge_errors_;
    return;
  }
  std::set<std::string> shown = names;
  for (const TopicTotals& t : *recent) shown.insert(t.topic);
  std::string transitions, deliveries;
  for (const TopicTotals& t : *totals) {
    if (shown.count(t.topic) == 0) continue;
    const std::string topic = Label(t.topic);
    const JobCounts& c = t.counts;
    const std::pair<const char*, int64_t> kinds[] = {
        {"enqueued", c.enqueued}, {"done", c.done},       {"failed", c.failed},
        {"retried", c.retried},   {"expired", c.expired}, {"dead", c.dead},
        {"lapsed", c.lapsed}};
    for (const auto& [kind, n] : kinds) {
      absl::StrAppend(&transitions, "delayq_store_transitions_total{topic=\"",
                      topic, "\",transition=\"", kind, "\"} ", n, "\n");
    }
    for (int b = 0; b < kLatenessBuckets; ++b) {
      const std::string within =
          b < kLatenessBuckets - 1
              ? absl::StrCat(kLatenessBoundsMicros[b] / 1e6)
              : "+Inf";
      absl::StrAppend(&deliveries, "delayq_store_deliveries_total{topic=\"",
                      topic, "\",late_within=\"", within, "\"} ", c.lateness[b],
                      "\n");
    }
  }
  Header("delayq_store_transitions_total", "counter",
         "Job transitions the store counted, per topic, from every process.",
         out);
  absl::StrAppend(out, transitions);
  Header("delayq_store_deliveries_total", "counter",
         "Reservations the store counted, per topic and lateness bucket (late "
         "by at most late_within seconds and more than the bucket before; "
         "not cumulative).",
         out);
  absl::StrAppend(out, deliveries);
}

void Metrics::State::ForgetIdleTopics(const std::set<std::string>& live) {
  const absl::Time before = clock.Now() - topic_idle;
  absl::MutexLock lock(&mu_);
  for (auto it = last_event_.begin(); it != last_event_.end();) {
    if (it->second > before || live.count(it->first) > 0) {
      ++it;
      continue;
    }
    events_.erase(it->first);
    lateness_.erase(it->first);
    run_time_.erase(it->first);
    it = last_event_.erase(it);
  }
}

std::string Metrics::State::Render() {
  std::string out;
  RenderGauges(&out);
  absl::MutexLock lock(&mu_);
  Header("delayq_job_events_total", "counter",
         "Job transitions this scheduler made or saw, per topic and event.",
         &out);
  for (const auto& [topic, counts] : events_) {
    for (const auto& [event, n] : counts) {
      absl::StrAppend(&out, "delayq_job_events_total{topic=\"", Label(topic),
                      "\",event=\"", event, "\"} ", n, "\n");
    }
  }
  Header("delayq_delivery_lateness_seconds", "histogram",
         "First reservation minus the time the job came due.", &out);
  for (const auto& [topic, h] : lateness_) {
    h.Render("delayq_delivery_lateness_seconds",
             absl::StrCat("topic=\"", Label(topic), "\""), &out);
  }
  Header("delayq_handler_seconds", "histogram",
         "Reservation to ack or fail, for leases this process handled.", &out);
  for (const auto& [topic, h] : run_time_) {
    h.Render("delayq_handler_seconds",
             absl::StrCat("topic=\"", Label(topic), "\""), &out);
  }
  Header("delayq_store_call_seconds", "histogram",
         "How long each store call took.", &out);
  for (const auto& [call, h] : calls_) {
    h.Render("delayq_store_call_seconds", absl::StrCat("call=\"", call, "\""),
             &out);
  }
  Header("delayq_store_call_errors_total", "counter",
         "Store calls that failed, per call and absl code.", &out);
  for (const auto& [key, n] : call_errors_) {
    absl::StrAppend(&out, "delayq_store_call_errors_total{call=\"", key.first,
                    "\",code=\"", key.second, "\"} ", n, "\n");
  }
  Header("delayq_store_call_refusals_total", "counter",
         "Store calls the store refused as the contract says (an unknown id, "
         "a stale lease, a taken id), per call and absl code.",
         &out);
  for (const auto& [key, n] : call_refusals_) {
    absl::StrAppend(&out, "delayq_store_call_refusals_total{call=\"", key.first,
                    "\",code=\"", key.second, "\"} ", n, "\n");
  }
  Header("delayq_build_info", "gauge", "1, labelled with delayq's version.",
         &out);
  absl::StrAppend(&out, "delayq_build_info{version=\"", kVersion, "\"} 1\n");
  Header("delayq_metrics_store_errors_total", "counter",
         "Renderings that could not read the topics' counts.", &out);
  absl::StrAppend(&out, "delayq_metrics_store_errors_total ", gauge_errors_,
                  "\n");
  return out;
}

Metrics::Metrics(Clock* clock, absl::Duration topic_idle)
    : state_(std::make_unique<State>(clock != nullptr ? *clock : RealClock(),
                                     topic_idle)) {}

// The scheduler is gone by now (this object outlives it), and with it the
// listener.
Metrics::~Metrics() = default;

std::unique_ptr<Backend> Metrics::Instrument(std::unique_ptr<Backend> backend) {
  State* state = state_.get();
  return internal::InstrumentBackend(
      std::move(backend), state->clock,
      [state](absl::string_view call, absl::Duration took,
              const absl::Status& status) {
        state->ObserveCall(call, took, status);
      });
}

void Metrics::Attach(Scheduler& scheduler) {
  if (state_->scheduler != nullptr) {
    state_->scheduler->RemoveListener(state_->listener);
  }
  State* state = state_.get();
  state_->scheduler = &scheduler;
  state_->listener = scheduler.AddBatchListener(
      [state](absl::Span<const Event> events) { state->RecordAll(events); });
}

void Metrics::Record(const Event& event) {
  state_->RecordAll(absl::MakeConstSpan(&event, 1));
}

std::string Metrics::PrometheusText() { return state_->Render(); }

}  // namespace delayq
