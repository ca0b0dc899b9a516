// Copyright delayq authors.

#include "bench/workloads/report.h"

#include <sys/resource.h>

#include <algorithm>
#include <cmath>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace delayq {
namespace bench {

Report::Report(absl::string_view system, absl::string_view workload)
    : system_(system), workload_(workload) {}

void Report::Param(absl::string_view name, int64_t value) {
  params_.emplace_back(std::string(name), absl::StrCat(value));
}
void Report::Param(absl::string_view name, absl::string_view value) {
  params_.emplace_back(std::string(name), JsonString(value));
}
void Report::Metric(absl::string_view name, int64_t value) {
  metrics_.emplace_back(std::string(name), absl::StrCat(value));
}
void Report::Metric(absl::string_view name, double value) {
  metrics_.emplace_back(std::string(name), JsonNumber(value));
}
void Report::MetricJson(absl::string_view name, std::string json) {
  metrics_.emplace_back(std::string(name), std::move(json));
}

namespace {
std::string Object(const std::vector<std::pair<std::string, std::string>>& kv) {
  return absl::StrCat("{",
                      absl::StrJoin(kv, ", ",
                                    [](std::string* out, const auto& p) {
                                      absl::StrAppend(out, JsonString(p.first),
                                                      ": ", p.second);
                                    }),
                      "}");
}
}  // namespace

std::string Report::ToJson() const {
  return absl::StrCat("{\"system\": ", JsonString(system_),
                      ", \"workload\": ", JsonString(workload_),
                      ", \"params\": ", Object(params_),
                      ", \"metrics\": ", Object(metrics_),
                      ", \"peak_rss_kb\": ", PeakRssKb(), "}");
}

void Report::PrintTable(FILE* out) const {
  std::vector<std::string> params;
  for (const auto& [name, value] : params_) {
    params.push_back(absl::StrCat(name, "=", value));
  }
  absl::FPrintF(out, "%s  %s  (%s)\n", workload_, system_,
                absl::StrJoin(params, " "));
  for (const auto& [name, value] : metrics_) {
    absl::FPrintF(out, "  %-22s %s\n", name, value);
  }
  absl::FPrintF(out, "  %-22s %d\n", "peak_rss_kb", PeakRssKb());
}

void Emit(const std::vector<Report>& reports, bool json) {
  for (const Report& report : reports) {
    if (json) {
      absl::PrintF("%s\n", report.ToJson());
    } else {
      report.PrintTable(stdout);
    }
  }
  std::fflush(stdout);
}

int64_t PeakRssKb() {
  struct rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;  // KiB on Linux
}

std::string JsonString(absl::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      absl::StrAppendFormat(&out, "\\u%04x", c);
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string JsonNumber(double value) {
  if (!std::isfinite(value)) return "null";
  if (value == std::floor(value) && std::fabs(value) < 1e15) {
    return absl::StrCat(static_cast<int64_t>(value));
  }
  return absl::StrFormat("%.3f", value);
}

std::string Distribution(std::vector<double>& values) {
  std::sort(values.begin(), values.end());
  auto rank = [&](double q) -> double {
    if (values.empty()) return 0;
    size_t i = static_cast<size_t>(std::ceil(q * values.size()));
    return values[std::min(values.size(), std::max<size_t>(i, 1)) - 1];
  };
  return absl::StrCat("{\"p50\": ", JsonNumber(rank(0.50)),
                      ", \"p99\": ", JsonNumber(rank(0.99)), ", \"max\": ",
                      JsonNumber(values.empty() ? 0 : values.back()),
                      ", \"count\": ", values.size(), "}");
}

Tally::Tally(int64_t n) : counts_(new std::atomic<int>[n]), n_(n) {
  for (int64_t i = 0; i < n; ++i) counts_[i].store(0);
}

int Tally::Deliver(int64_t index) {
  if (index < 0 || index >= n_) {
    strays_.fetch_add(1);
    return 0;
  }
  delivered_.fetch_add(1);
  return counts_[index].fetch_add(1) + 1;
}

int64_t Tally::Duplicates() const {
  int64_t duplicates = 0;
  for (int64_t i = 0; i < n_; ++i) {
    duplicates += std::max(0, counts_[i].load() - 1);
  }
  return duplicates;
}

int64_t Tally::Missing() const {
  int64_t missing = 0;
  for (int64_t i = 0; i < n_; ++i) missing += counts_[i].load() == 0;
  return missing;
}

Progress::Progress(std::string label, int64_t total,
                   const std::atomic<int64_t>* done)
    : label_(std::move(label)),
      total_(total),
      done_(done),
      start_(absl::Now()),
      thread_(&Progress::Run, this) {}

Progress::~Progress() {
  stop_.Notify();
  thread_.join();
  absl::FPrintF(stderr, "\r%-70s\r", "");
}

void Progress::Run() {
  while (!stop_.WaitForNotificationWithTimeout(absl::Milliseconds(250))) {
    const int64_t done = done_->load();
    const double seconds = absl::ToDoubleSeconds(absl::Now() - start_);
    absl::FPrintF(stderr, "\r%s: %d/%d (%.0f/s)   ", label_, done, total_,
                  seconds > 0 ? done / seconds : 0.0);
  }
}

StallProbe::StallProbe()
    : thread_([this] {
        constexpr absl::Duration kStep = absl::Milliseconds(1);
        while (!stop_.HasBeenNotified()) {
          const absl::Time before = absl::Now();
          absl::SleepFor(kStep);
          oversleep_ms_.push_back(
              absl::ToDoubleMilliseconds(absl::Now() - before - kStep));
        }
      }) {}

StallProbe::~StallProbe() { Join(); }

void StallProbe::Join() {
  if (!thread_.joinable()) return;
  stop_.Notify();
  thread_.join();
}

std::string StallProbe::Finish() {
  Join();
  return Distribution(oversleep_ms_);
}

int64_t ParseIndex(absl::string_view payload) {
  payload = payload.substr(0, payload.find('|'));
  int64_t index;
  return absl::SimpleAtoi(payload, &index) ? index : -1;
}

std::string ConsumedLine(const BaselineConsumed& c) {
  return absl::StrCat("consumed ", c.delivered, " ", c.elapsed_ns, " ",
                      c.duplicates, " ", c.missing, " ", c.errors);
}

absl::StatusOr<BaselineConsumed> ParseConsumedLine(absl::string_view line) {
  const std::vector<absl::string_view> f = absl::StrSplit(line, ' ');
  BaselineConsumed c;
  if (f.size() != 6 || f[0] != "consumed" ||
      !absl::SimpleAtoi(f[1], &c.delivered) ||
      !absl::SimpleAtoi(f[2], &c.elapsed_ns) ||
      !absl::SimpleAtoi(f[3], &c.duplicates) ||
      !absl::SimpleAtoi(f[4], &c.missing) ||
      !absl::SimpleAtoi(f[5], &c.errors)) {
    return absl::InternalError(absl::StrCat("consumer said '", line, "'"));
  }
  return c;
}

Report BaselineW1Report(absl::string_view system, int64_t n, int concurrency,
                        double enqueue_s, const BaselineConsumed& consumed) {
  const double consume_s = consumed.elapsed_ns / 1e9;
  Report report(system, "w1");
  report.Param("shape", "two-process");
  report.Param("n", n);
  report.Param("concurrency", static_cast<int64_t>(concurrency));
  report.Param("mode", "single");
  report.Param("batch", static_cast<int64_t>(1));
  report.Metric("enqueued", n);
  report.Metric("enqueue_s", enqueue_s);
  report.Metric("enqueue_jobs_per_s", enqueue_s > 0 ? n / enqueue_s : 0);
  report.Metric("consumed", consumed.delivered);
  report.Metric("consume_s", consume_s);
  report.Metric("consume_jobs_per_s",
                consume_s > 0 ? consumed.delivered / consume_s : 0);
  report.Metric("duplicates", consumed.duplicates);
  report.Metric("missing", consumed.missing);
  report.Metric("ack_errors", consumed.errors);
  return report;
}

}  // namespace bench
}  // namespace delayq
