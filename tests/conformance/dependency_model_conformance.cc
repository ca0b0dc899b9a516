// Copyright delayq authors.
//
// The randomized dependency test: random DAGs of jobs that wait for others,
// driven by random acks, failures, cancels and lease expiries, checked after
// every step against a plain model of "Dependencies" at Backend::Add(). The
// model knows each job only as far as dependencies care: waiting, live
// (ready, delayed or reserved), dead, done or gone. So a job that the model
// releases once is never seen waiting again (it becomes ready exactly once),
// no lease is ever given for a job whose dependencies are not all settled,
// and every failure applies the waiting job's policy. The seed is printed;
// set DELAYQ_MODEL_SEED to replay one.

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "tests/conformance/dependency_conformance.h"
#include "tests/testing/status_matchers.h"

namespace delayq {
namespace testing {
namespace {

enum class Kind { kWaiting, kLive, kDead, kDone, kGone };

const char* KindName(Kind k) {
  switch (k) {
    case Kind::kWaiting:
      return "waiting";
    case Kind::kLive:
      return "live";
    case Kind::kDead:
      return "dead";
    case Kind::kDone:
      return "done";
    case Kind::kGone:
      return "gone";
  }
  return "?";
}

Kind KindOf(JobState s) {
  switch (s) {
    case JobState::kWaiting:
      return Kind::kWaiting;
    case JobState::kDead:
      return Kind::kDead;
    case JobState::kDone:
      return Kind::kDone;
    case JobState::kDelayed:
    case JobState::kReady:
    case JobState::kReserved:
      return Kind::kLive;
  }
  return Kind::kGone;
}

struct ModelJob {
  Kind kind = Kind::kLive;
  std::set<std::string> pending;
  DependencyFailure policy = DependencyFailure::kFail;
  bool kept = false;  // kept done once acknowledged
  std::string last_error;
};

// The contract of dependencies, written as directly as possible.
class DependencyModel {
 public:
  bool Known(const std::string& id) const {
    auto it = jobs_.find(id);
    return it != jobs_.end() && it->second.kind != Kind::kGone;
  }

  void Add(const NewJob& job) {
    ModelJob m;
    m.policy = job.on_dependency_failure;
    m.kept = job.keep_for > absl::ZeroDuration();
    jobs_[job.id] = m;
    for (const std::string& d : job.after) {
      const Kind k = jobs_[d].kind;
      if (k == Kind::kDone) continue;
      if (k == Kind::kDead || k == Kind::kGone) {
        if (Apply(job.id, d, k == Kind::kDead)) return;
        continue;
      }
      jobs_[job.id].pending.insert(d);
    }
    if (!jobs_[job.id].pending.empty()) {
      jobs_[job.id].kind = Kind::kWaiting;
      for (const std::string& d : jobs_[job.id].pending) {
        dependants_[d].insert(job.id);
      }
    }
  }

  void Acked(const std::string& id) {
    jobs_[id].kind = jobs_[id].kept ? Kind::kDone : Kind::kGone;
    Settle(id, /*met=*/true, /*died=*/false);
  }
  void Died(const std::string& id) {
    jobs_[id].kind = Kind::kDead;
    Settle(id, false, true);
  }
  void Cancelled(const std::string& id) {
    Forget(id);
    jobs_[id].kind = Kind::kGone;
    Settle(id, false, false);
  }

  const std::map<std::string, ModelJob>& jobs() const { return jobs_; }

  // How often each settlement happened, so that a run can show it covered
  // them all.
  int released = 0, failed = 0, cancelled = 0;

 private:
  // Applies `id`'s policy for dependency `d` that died (or went); returns
  // whether `id` stopped waiting because of it (failed or cancelled).
  bool Apply(const std::string& id, const std::string& d, bool died) {
    ModelJob& m = jobs_[id];
    if (m.policy == DependencyFailure::kRun) return false;
    Forget(id);
    if (m.policy == DependencyFailure::kFail) {
      ++failed;
      m.kind = Kind::kDead;
      m.last_error = died ? absl::StrCat("dependency '", d, "' failed")
                          : absl::StrCat("dependency '", d, "' was cancelled");
      Settle(id, false, true);
    } else {
      ++cancelled;
      m.kind = Kind::kGone;
      Settle(id, false, false);
    }
    return true;
  }

  void Settle(const std::string& id, bool met, bool died) {
    const std::set<std::string> waiting = std::move(dependants_[id]);
    dependants_.erase(id);
    for (const std::string& w : waiting) {
      ModelJob& m = jobs_[w];
      if (m.kind != Kind::kWaiting) continue;
      if (!met && Apply(w, id, died)) continue;
      m.pending.erase(id);
      if (m.pending.empty()) {
        ++released;
        m.kind = Kind::kLive;
      }
    }
  }

  void Forget(const std::string& id) {
    ModelJob& m = jobs_[id];
    for (const std::string& d : m.pending) dependants_[d].erase(id);
    m.pending.clear();
  }

  std::map<std::string, ModelJob> jobs_;
  std::map<std::string, std::set<std::string>> dependants_;
};

class DependencyRun {
 public:
  DependencyRun(Backend& backend, std::string topic, uint64_t seed)
      : backend_(backend), topic_(std::move(topic)), rng_(seed) {}

  void Run(int steps) {
    for (step_ = 0; step_ < steps && !::testing::Test::HasFailure(); ++step_) {
      Step();
      Check();
    }
    std::cout << "released " << model_.released << ", failed " << model_.failed
              << ", cancelled " << model_.cancelled << " waiting jobs\n";
    EXPECT_GT(model_.released, 0);
    EXPECT_GT(model_.failed, 0);
    EXPECT_GT(model_.cancelled, 0);
  }

 private:
  int Pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }

  void Step() {
    const int op = Pick(100);
    if (op < 35 || model_.jobs().size() < 3) return AddJobs();
    if (op < 55) return Reserve();
    if (op < 75) return Ack();
    if (op < 85) return Fail();
    if (op < 92) return Cancel();
    return Expire();
  }

  // Zero-padded, so that the model's ids sort in the order they were made.
  static std::string IdOf(int n) {
    return absl::StrCat("{f}j", absl::Dec(n, absl::kZeroPad6));
  }

  NewJob RandomJob() {
    NewJob job;
    job.id = IdOf(next_id_++);
    job.topic = topic_;
    job.payload = job.id;
    job.ttr = absl::Seconds(30);
    job.max_attempts = 1 + Pick(2);
    job.backoff = Backoff::Fixed(absl::ZeroDuration());
    job.run_at = Pick(4) == 0 ? now_ + absl::Seconds(1 + Pick(60)) : now_;
    if (Pick(3) == 0) {
      job.keep_for = absl::Hours(10);
      job.keep_at_most = kMaxDonePerTopic;
    }
    job.on_dependency_failure = static_cast<DependencyFailure>(Pick(3));
    return job;
  }

  // Mostly a job the store holds; now and then any id ever used (gone ones
  // and an unknown one included), so that refusals are exercised too.
  std::string RandomDependency() {
    if (next_id_ == 0 || Pick(40) == 0) return "{f}never";
    if (Pick(10) == 0) return IdOf(Pick(next_id_));
    std::vector<std::string> held;
    for (const auto& [id, m] : model_.jobs()) {
      if (m.kind != Kind::kGone) held.push_back(id);
    }
    if (held.empty()) return "{f}never";
    // The newest are the likeliest to be pending still.
    const int n = static_cast<int>(held.size());
    return held[std::max(0, n - 1 - Pick(std::min(n, 20)))];
  }

  void AddJobs() {
    std::vector<NewJob> batch(1 + (Pick(4) == 0 ? Pick(3) : 0));
    std::set<std::string> earlier;
    bool refused = false;
    for (NewJob& job : batch) {
      job = RandomJob();
      std::set<std::string> after;
      const int n = Pick(4);
      for (int i = 0; i < n; ++i) after.insert(RandomDependency());
      if (!earlier.empty() && Pick(2) == 0) after.insert(*earlier.begin());
      job.after.assign(after.begin(), after.end());
      for (const std::string& d : job.after) {
        if (!model_.Known(d) && !earlier.count(d)) refused = true;
      }
      earlier.insert(job.id);
    }
    const absl::Status s = backend_.Add(batch, now_);
    if (refused) {
      ASSERT_EQ(s.code(), absl::StatusCode::kNotFound) << Where() << s;
      for (const NewJob& job : batch) {
        EXPECT_EQ(backend_.Get(job.id).status().code(),
                  absl::StatusCode::kNotFound)
            << Where() << job.id;
      }
      return;
    }
    ASSERT_OK(s) << Where();
    for (const NewJob& job : batch) model_.Add(job);
  }

  void Reserve() {
    std::vector<Transition> moved;
    absl::StatusOr<std::vector<Lease>> leases =
        backend_.Reserve(topic_, 1 + Pick(3), now_, &moved);
    ASSERT_OK(leases.status()) << Where();
    Moved(moved);
    for (const Lease& l : *leases) {
      auto it = model_.jobs().find(l.job.id);
      ASSERT_TRUE(it != model_.jobs().end()) << Where() << l.job.id;
      // Never before every dependency is settled.
      ASSERT_EQ(it->second.kind, Kind::kLive)
          << Where() << l.job.id << " reserved while "
          << KindName(it->second.kind);
      leases_.push_back(l);
    }
  }

  // A lease taken at random from those held (it may have gone stale).
  bool TakeLease(Lease* lease) {
    if (leases_.empty()) return false;
    const int i = Pick(static_cast<int>(leases_.size()));
    *lease = leases_[i];
    leases_.erase(leases_.begin() + i);
    return true;
  }

  void Ack() {
    Lease l;
    if (!TakeLease(&l)) return;
    const absl::Status s = backend_.Ack(l.job.id, l.token, "", now_);
    if (absl::IsFailedPrecondition(s)) return;
    ASSERT_OK(s) << Where();
    model_.Acked(l.job.id);
  }

  void Fail() {
    Lease l;
    if (!TakeLease(&l)) return;
    absl::StatusOr<FailOutcome> outcome =
        backend_.Fail(l.job.id, l.token, "boom", now_, now_);
    if (absl::IsFailedPrecondition(outcome.status())) return;
    ASSERT_OK(outcome.status()) << Where();
    if (*outcome == FailOutcome::kDead) model_.Died(l.job.id);
  }

  void Cancel() {
    const std::string id = RandomDependency();
    const absl::Status s = backend_.Cancel(id, now_);
    if (!model_.Known(id)) {
      ASSERT_EQ(s.code(), absl::StatusCode::kNotFound) << Where() << id;
      return;
    }
    ASSERT_OK(s) << Where() << id;
    model_.Cancelled(id);
  }

  // Time moves past every lease: the ones with attempts left come back,
  // the others go dead.
  void Expire() {
    now_ += absl::Seconds(31 + Pick(30));
    leases_.clear();
    absl::StatusOr<PromoteResult> moved = backend_.PromoteDue(now_, 100000);
    ASSERT_OK(moved.status()) << Where();
    Moved(moved->transitions);
  }

  void Moved(const std::vector<Transition>& moved) {
    for (const Transition& t : moved) {
      if (t.kind == Transition::Kind::kDead) model_.Died(t.id);
    }
  }

  void Check() {
    int64_t waiting = 0;
    for (const auto& [id, m] : model_.jobs()) {
      if (m.kind == Kind::kWaiting) ++waiting;
      absl::StatusOr<Job> job = backend_.Get(id);
      if (m.kind == Kind::kGone) {
        ASSERT_EQ(job.status().code(), absl::StatusCode::kNotFound)
            << Where() << id;
        continue;
      }
      ASSERT_OK(job.status()) << Where() << id;
      ASSERT_STREQ(KindName(KindOf(job->state)), KindName(m.kind))
          << Where() << id;
      // Which dependency a job names when several of its dependencies fail
      // in one cascade depends on the order the store settles them in.
      if (!m.last_error.empty()) {
        ASSERT_THAT(
            job->last_error,
            ::testing::MatchesRegex("dependency '.*' (failed|was cancelled)"))
            << Where() << id;
      }
    }
    absl::StatusOr<TopicStats> stats = backend_.Stats(topic_);
    ASSERT_OK(stats.status()) << Where();
    ASSERT_EQ(stats->waiting, waiting) << Where();
  }

  std::string Where() const { return absl::StrCat("step ", step_, ": "); }

  Backend& backend_;
  const std::string topic_;
  std::mt19937_64 rng_;
  DependencyModel model_;
  absl::Time now_ = kT0;
  int step_ = 0;
  int next_id_ = 0;
  std::vector<Lease> leases_;
};

uint64_t DependencySeed() {
  const char* env = std::getenv("DELAYQ_MODEL_SEED");
  return env != nullptr ? std::strtoull(env, nullptr, 10) : 20261129;
}

TEST_P(DependencyConformanceTest, RandomDependencyGraphsMatchTheModel) {
  const uint64_t seed = DependencySeed();
  std::cout << "dependency model seed " << seed
            << " (DELAYQ_MODEL_SEED to replay)\n";
  RecordProperty("model_seed", std::to_string(seed));
  DependencyRun run(*backend_, Topic(), seed);
  run.Run(GetParam().model_steps / 3);
}

}  // namespace
}  // namespace testing
}  // namespace delayq
