// Copyright delayq authors.
//
// The game-server shape: N pending timers in one process on the memory
// store, ticked from a frame loop on a simulated clock, beside the binary
// heap of (due, seq, id, payload) a team would write by hand.
//
//   bazel run -c opt //bench:memory_footprint -- --n=1000000
//
// Each part runs in a child process of its own (fork), so its resident-set
// growth is its own: memory one part freed and the allocator kept does not
// flatter the next. One process per part, everything in that process: the
// producer, the clock and the consumer (this is the embedded shape).
//
// Prints, per part: bytes per pending job (RSS growth / N), enqueue rate
// (one call per job), beside the plain heap and beside the heap that can
// also cancel by id, and the enqueue rate of the memory store alone
// (Backend::Add, no scheduler); then for delayq: idle Tick() cost, the cost of
// a 60 Hz frame (advance 16 ms, Tick(), reserve and ack what is due), and the
// RSS (as it is, then after malloc_trim(0)) and the heap bytes in use after
// every job has run, as shares of their peak growth.

#include <malloc.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <optional>
#include <queue>
#include <random>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "delayq/delayq.h"

ABSL_FLAG(int64_t, n, 1'000'000, "pending delayed jobs");
ABSL_FLAG(int, frames, 3000, "60 Hz frames timed after the enqueue");
ABSL_FLAG(bool, json, false,
          "print one JSON line (bench/run_all.sh's format) instead of a table");

namespace delayq {
namespace {

constexpr char kTopic[] = "npc.respawn";
constexpr char kPayload[] = "{\"npc\":12345}";
const absl::Duration kSpread = absl::Hours(1);
const absl::Time kStart = absl::FromUnixSeconds(1'800'000'000);

// Resident set size of this process, in bytes.
int64_t RssBytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * sysconf(_SC_PAGESIZE);
}

// Bytes the allocator has handed out and not had back. RSS after a drain
// says little: glibc keeps freed pages for reuse. This says whether the
// store itself let go.
int64_t HeapInUse() {
  const struct mallinfo2 info = mallinfo2();
  return static_cast<int64_t>(info.uordblks + info.hblkhd);
}

// The delays of the N jobs, uniform over the spread, drawn once so both
// parts see the same ones.
std::vector<absl::Duration> Delays(int64_t n) {
  std::mt19937_64 gen(42);
  std::uniform_int_distribution<int64_t> us(1,
                                            absl::ToInt64Microseconds(kSpread));
  std::vector<absl::Duration> out(n);
  for (auto& d : out) d = absl::Microseconds(us(gen));
  return out;
}

struct Figures {
  double bytes_per_job = 0;
  double enqueue_per_s = 0;
  double idle_tick_ns = 0;
  double frame_mean_us = 0;
  double frame_p99_us = 0;
  double frame_jobs = 0;
  double after_drain_share = 0;  // RSS growth after the drain / peak growth
  double after_trim_share = 0;   // the same after malloc_trim(0)
  double heap_after_drain_share = 0;  // the same for heap bytes in use
};

// What a game team writes by hand: a min-heap of (due, seq, id, payload).
// With `by_id`, timers can be cancelled by id too, as delayq's can: beside
// the heap, a hash set of the live ids (a cancel erases the id; a timer
// popped whose id is gone is skipped).
Figures RunHeap(const std::vector<absl::Duration>& delays, bool by_id) {
  struct Timer {
    absl::Time due;
    uint64_t seq;
    std::string id;
    std::string payload;
  };
  struct Later {
    bool operator()(const Timer& a, const Timer& b) const {
      return a.due != b.due ? a.due > b.due : a.seq > b.seq;
    }
  };
  const int64_t n = static_cast<int64_t>(delays.size());
  const int64_t before = RssBytes();
  std::priority_queue<Timer, std::vector<Timer>, Later> heap;
  absl::flat_hash_set<std::string> live;
  const absl::Time t0 = absl::Now();
  for (int64_t i = 0; i < n; ++i) {
    // Ids shaped like delayq's generated ones (12 hex digits, '-', serial).
    std::string id = absl::StrCat("5f3a9c01b2d4-", i + 1);
    if (by_id) live.insert(id);
    heap.push(Timer{kStart + delays[i], static_cast<uint64_t>(i), std::move(id),
                    kPayload});
  }
  const absl::Duration took = absl::Now() - t0;
  Figures f;
  f.bytes_per_job = static_cast<double>(RssBytes() - before) / n;
  f.enqueue_per_s = n / absl::ToDoubleSeconds(took);
  return f;
}

// The memory store alone, without the scheduler in front: one
// Backend::Add() of one job per call, ids shaped and made as the heap's are.
// Beside the heap and the whole Enqueue() it tells which part of the gap is
// the store's indexes and which the scheduler's checks and id making.
Figures RunStoreAlone(const std::vector<absl::Duration>& delays) {
  const int64_t n = static_cast<int64_t>(delays.size());
  std::unique_ptr<Backend> store = NewMemoryBackend();
  const int64_t before = RssBytes();
  NewJob job;
  job.topic = kTopic;
  job.payload = kPayload;
  const absl::Time t0 = absl::Now();
  for (int64_t i = 0; i < n; ++i) {
    job.id = absl::StrCat("5f3a9c01b2d4-", i + 1);
    job.run_at = kStart + delays[i];
    if (absl::Status s = store->Add({&job, 1}, kStart); !s.ok()) {
      fprintf(stderr, "add: %s\n", s.ToString().c_str());
      _exit(1);
    }
  }
  const absl::Duration took = absl::Now() - t0;
  Figures f;
  f.bytes_per_job = static_cast<double>(RssBytes() - before) / n;
  f.enqueue_per_s = n / absl::ToDoubleSeconds(took);
  return f;
}

Figures RunDelayq(const std::vector<absl::Duration>& delays, int frames) {
  const int64_t n = static_cast<int64_t>(delays.size());
  SimulatedClock clock(kStart);
  SchedulerOptions options;
  options.clock = &clock;
  absl::StatusOr<std::unique_ptr<Scheduler>> made =
      Scheduler::Create(NewMemoryBackend(), options);
  if (!made.ok()) {
    fprintf(stderr, "create: %s\n", made.status().ToString().c_str());
    _exit(1);
  }
  Scheduler& scheduler = **made;
  const int64_t before = RssBytes();
  const int64_t heap_before = HeapInUse();
  JobOptions job;
  const absl::Time t0 = absl::Now();
  for (int64_t i = 0; i < n; ++i) {
    job.delay = delays[i];
    absl::StatusOr<std::string> id = scheduler.Enqueue(kTopic, kPayload, job);
    if (!id.ok()) {
      fprintf(stderr, "enqueue: %s\n", id.status().ToString().c_str());
      _exit(1);
    }
  }
  const absl::Duration took = absl::Now() - t0;
  Figures f;
  const int64_t peak_growth = RssBytes() - before;
  const int64_t heap_peak_growth = HeapInUse() - heap_before;
  f.bytes_per_job = static_cast<double>(peak_growth) / n;
  f.enqueue_per_s = n / absl::ToDoubleSeconds(took);

  // Idle Tick(): nothing is due before the first job's time.
  constexpr int kIdle = 200'000;
  const absl::Time i0 = absl::Now();
  for (int i = 0; i < kIdle; ++i) (void)scheduler.Tick();
  f.idle_tick_ns = absl::ToDoubleNanoseconds(absl::Now() - i0) / kIdle;

  // The frame loop: advance 16 ms, promote what came due, run it.
  int64_t done = 0;
  auto frame = [&]() {
    clock.Advance(absl::Milliseconds(16));
    (void)scheduler.Tick();
    for (;;) {
      absl::StatusOr<std::optional<Lease>> lease = scheduler.Reserve(kTopic);
      if (!lease.ok() || !lease->has_value()) break;
      (void)scheduler.Ack(**lease);
      ++done;
    }
  };
  std::vector<double> costs;
  costs.reserve(frames);
  for (int i = 0; i < frames; ++i) {
    const absl::Time s = absl::Now();
    frame();
    costs.push_back(absl::ToDoubleMicroseconds(absl::Now() - s));
  }
  std::sort(costs.begin(), costs.end());
  double sum = 0;
  for (double c : costs) sum += c;
  f.frame_mean_us = sum / frames;
  f.frame_p99_us =
      costs[std::min<size_t>(costs.size() - 1, costs.size() * 99 / 100)];
  f.frame_jobs = static_cast<double>(done) / frames;

  // The rest of the hour, then every job has run.
  while (done < n) {
    clock.Advance(absl::Seconds(1));
    (void)scheduler.Tick();
    for (;;) {
      absl::StatusOr<std::vector<Lease>> leases =
          scheduler.ReserveBatch(kTopic, 1000);
      if (!leases.ok() || leases->empty()) break;
      for (const Lease& l : *leases) (void)scheduler.Ack(l);
      done += static_cast<int64_t>(leases->size());
    }
    if (clock.Now() > kStart + kSpread + absl::Minutes(1)) break;
  }
  if (done != n) {
    fprintf(stderr, "drain: %lld of %lld jobs ran\n",
            static_cast<long long>(done), static_cast<long long>(n));
    _exit(1);
  }
  f.after_drain_share = static_cast<double>(RssBytes() - before) /
                        std::max<int64_t>(peak_growth, 1);
  // glibc keeps small freed blocks cached for reuse; a host that wants the
  // pages back asks for them at a quiet moment.
  malloc_trim(0);
  f.after_trim_share = static_cast<double>(RssBytes() - before) /
                       std::max<int64_t>(peak_growth, 1);
  f.heap_after_drain_share = static_cast<double>(HeapInUse() - heap_before) /
                             std::max<int64_t>(heap_peak_growth, 1);
  return f;
}

// Runs `part` in a child process and returns what it measured.
template <typename Part>
Figures InChild(Part part) {
  int fds[2];
  if (pipe(fds) != 0) _exit(1);
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    Figures f = part();
    if (write(fds[1], &f, sizeof f) != sizeof f) _exit(1);
    _exit(0);
  }
  close(fds[1]);
  Figures f;
  const bool got = read(fds[0], &f, sizeof f) == sizeof f;
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!got || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    fprintf(stderr, "a part failed\n");
    exit(1);
  }
  return f;
}

void PrintJson(int64_t n, const Figures& dq, const Figures& heap,
               const Figures& by_id, const Figures& store) {
  printf(
      "{\"system\": \"delayq-memory\", \"workload\": \"footprint\", "
      "\"params\": {\"shape\": \"one-process\", \"n\": %lld}, "
      "\"metrics\": {\"bytes_per_job\": %.1f, \"enqueue_jobs_per_s\": %.0f, "
      "\"baseline_bytes_per_job\": %.1f, \"baseline_enqueue_per_s\": %.0f, "
      "\"cancellable_baseline_bytes_per_job\": %.1f, "
      "\"cancellable_baseline_enqueue_per_s\": %.0f, "
      "\"store_alone_bytes_per_job\": %.1f, "
      "\"store_alone_enqueue_per_s\": %.0f, "
      "\"idle_tick_ns\": %.1f, \"frame_mean_us\": %.2f, "
      "\"frame_p99_us\": %.2f, \"frame_jobs\": %.2f, "
      "\"rss_left_share\": %.3f, \"rss_left_after_trim_share\": %.3f, "
      "\"heap_left_share\": %.3f}}\n",
      static_cast<long long>(n), dq.bytes_per_job, dq.enqueue_per_s,
      heap.bytes_per_job, heap.enqueue_per_s, by_id.bytes_per_job,
      by_id.enqueue_per_s, store.bytes_per_job, store.enqueue_per_s,
      dq.idle_tick_ns, dq.frame_mean_us, dq.frame_p99_us, dq.frame_jobs,
      dq.after_drain_share, dq.after_trim_share, dq.heap_after_drain_share);
}

}  // namespace
}  // namespace delayq

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  using namespace delayq;  // NOLINT: a benchmark's main
  const int64_t n = absl::GetFlag(FLAGS_n);
  const int frames = absl::GetFlag(FLAGS_frames);
  const std::vector<absl::Duration> delays = Delays(n);
  if (!absl::GetFlag(FLAGS_json)) {
    printf(
        "memory footprint, one process, %lld delayed jobs over 1 h, "
        "topic %s, payload %s\n",
        static_cast<long long>(n), kTopic, kPayload);
  }
  const Figures heap = InChild([&] { return RunHeap(delays, false); });
  const Figures by_id = InChild([&] { return RunHeap(delays, true); });
  const Figures store = InChild([&] { return RunStoreAlone(delays); });
  const Figures dq = InChild([&] { return RunDelayq(delays, frames); });
  if (absl::GetFlag(FLAGS_json)) {
    PrintJson(n, dq, heap, by_id, store);
    return 0;
  }
  printf("%-34s %14s %14s %8s %14s %8s\n", "figure", "delayq memory",
         "hand heap", "ratio", "+cancel by id", "ratio");
  auto row = [](const char* figure, double dq, double plain, double by_id) {
    printf("%-34s %14.0f %14.0f %8.2f %14.0f %8.2f\n", figure, dq, plain,
           dq / plain, by_id, dq / by_id);
  };
  row("bytes per pending job", dq.bytes_per_job, heap.bytes_per_job,
      by_id.bytes_per_job);
  row("enqueue, one call per job (/s)", dq.enqueue_per_s, heap.enqueue_per_s,
      by_id.enqueue_per_s);
  row("  the store alone (Backend::Add)", store.enqueue_per_s,
      heap.enqueue_per_s, by_id.enqueue_per_s);
  printf("%-34s %14.0f\n", "idle Tick() (ns)", dq.idle_tick_ns);
  printf("%-34s %14.1f   (%.1f jobs a frame)\n", "60 Hz frame, mean (us)",
         dq.frame_mean_us, dq.frame_jobs);
  printf("%-34s %14.1f\n", "60 Hz frame, p99 (us)", dq.frame_p99_us);
  printf("%-34s %13.0f%%\n", "RSS growth left after all ran",
         100 * dq.after_drain_share);
  printf("%-34s %13.0f%%\n", "  the same after malloc_trim(0)",
         100 * dq.after_trim_share);
  printf("%-34s %13.0f%%\n", "heap in use left after all ran",
         100 * dq.heap_after_drain_share);
  return 0;
}
