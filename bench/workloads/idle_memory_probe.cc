// Copyright delayq authors.

#include "bench/workloads/idle_memory_probe.h"

#include <chrono>
#include <cstdint>
#include <vector>

#include "absl/strings/str_format.h"

namespace delayq {
namespace bench {
namespace {

constexpr size_t kPageBytes = 4096;

// Reads one byte of every page of `pages`; returns microseconds per page.
double TouchUsPerPage(const std::vector<char>& pages) {
  const auto start = std::chrono::steady_clock::now();
  int64_t sum = 0;
  for (size_t i = 0; i < pages.size(); i += kPageBytes) {
    sum += *static_cast<const volatile char*>(&pages[i]);
  }
  const double us = std::chrono::duration<double, std::micro>(
                        std::chrono::steady_clock::now() - start)
                        .count();
  // Keeps the reads: their sum is used.
  if (sum == -1) return -1;
  return us / static_cast<double>(pages.size() / kPageBytes);
}

}  // namespace

IdleMemoryProbe::IdleMemoryProbe(absl::Duration idle)
    : idle_(idle), thread_([this] {
        // Written, so that every page is the process's own, then read twice:
        // the second read is the warm figure.
        std::vector<char> pages(kPages * kPageBytes, 1);
        TouchUsPerPage(pages);
        warm_us_ = TouchUsPerPage(pages);
        if (stop_.WaitForNotificationWithTimeout(idle_)) return;
        after_idle_us_ = TouchUsPerPage(pages);
      }) {}

IdleMemoryProbe::~IdleMemoryProbe() {
  if (!thread_.joinable()) return;
  stop_.Notify();
  thread_.join();
}

std::string IdleMemoryProbe::Finish() {
  if (thread_.joinable()) thread_.join();
  return absl::StrFormat(
      "{\"warm_us_per_page\": %.3f, \"after_idle_us_per_page\": %.3f, "
      "\"idle_ms\": %d}",
      warm_us_, after_idle_us_, absl::ToInt64Milliseconds(idle_));
}

}  // namespace bench
}  // namespace delayq
