// Copyright delayq authors.
//
// The randomized conformance test: a plain reference model of the Backend
// contract (linear scans, no indexes, easy to check by reading) and the store
// under test are driven by the same random operations, and after every step
// their answers and their contents must agree. The seed is printed; set
// DELAYQ_MODEL_SEED to replay one.

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <map>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "tests/conformance/backend_conformance.h"
#include "tests/testing/status_matchers.h"

namespace delayq {
namespace testing {
namespace {

using Code = absl::StatusCode;

struct ModelJob {
  Job job;
  uint64_t seq = 0;
  uint64_t token = 0;  // the store's token of the current lease
  uint64_t death = 0;
};

// The contract, written as directly as possible.
class Model {
 public:
  Code Add(const std::vector<NewJob>& jobs, absl::Time now) {
    std::vector<std::string> seen;
    for (const NewJob& j : jobs) {
      if (jobs_.count(j.id) ||
          std::find(seen.begin(), seen.end(), j.id) != seen.end()) {
        return Code::kAlreadyExists;
      }
      seen.push_back(j.id);
    }
    for (const NewJob& j : jobs) {
      ModelJob m;
      m.job.id = j.id;
      m.job.topic = j.topic;
      m.job.payload = j.payload;
      m.job.priority = j.priority;
      m.job.max_attempts = j.max_attempts;
      m.job.ttr = j.ttr;
      m.job.backoff = j.backoff;
      m.job.enqueued_at = now;
      m.job.run_at = j.run_at;
      m.job.state = j.run_at > now ? JobState::kDelayed : JobState::kReady;
      m.seq = next_seq_++;
      jobs_[j.id] = m;
    }
    return Code::kOk;
  }

  // Reserves like the store and returns the ids in order; the caller records
  // the store's tokens with SetToken().
  std::vector<std::string> Reserve(const std::string& topic, int max,
                                   absl::Time now) {
    for (auto& [id, m] : jobs_) {
      if (m.job.topic == topic && IsDue(m, now)) MoveDue(m);
    }
    std::vector<ModelJob*> ready;
    for (auto& [id, m] : jobs_) {
      if (m.job.topic == topic && m.job.state == JobState::kReady) {
        ready.push_back(&m);
      }
    }
    std::sort(ready.begin(), ready.end(), [](ModelJob* a, ModelJob* b) {
      return std::tie(a->job.priority, a->job.run_at, a->seq) <
             std::tie(b->job.priority, b->job.run_at, b->seq);
    });
    std::vector<std::string> ids;
    for (ModelJob* m : ready) {
      if (static_cast<int>(ids.size()) == max) break;
      m->job.state = JobState::kReserved;
      m->job.attempts++;
      m->job.deadline = now + m->job.ttr;
      ids.push_back(m->job.id);
    }
    return ids;
  }

  void SetToken(const std::string& id, uint64_t token) {
    jobs_[id].token = token;
  }

  Code Ack(const std::string& id, uint64_t token) {
    if (!Current(id, token)) return Code::kFailedPrecondition;
    jobs_.erase(id);
    return Code::kOk;
  }

  Code Fail(const std::string& id, uint64_t token, const std::string& error,
            absl::Time retry_at, absl::Time now, FailOutcome* outcome) {
    if (!Current(id, token)) return Code::kFailedPrecondition;
    Job& j = jobs_[id].job;
    j.last_error = error;
    j.deadline = absl::InfinitePast();
    if (j.attempts < j.max_attempts) {
      j.run_at = retry_at;
      j.state = retry_at > now ? JobState::kDelayed : JobState::kReady;
      *outcome = FailOutcome::kRetry;
    } else {
      Kill(jobs_[id]);
      *outcome = FailOutcome::kDead;
    }
    return Code::kOk;
  }

  Code Release(const std::string& id, uint64_t token, absl::Time run_at,
               absl::Time now) {
    if (!Current(id, token)) return Code::kFailedPrecondition;
    Job& j = jobs_[id].job;
    j.attempts--;
    j.run_at = run_at;
    j.deadline = absl::InfinitePast();
    j.state = run_at > now ? JobState::kDelayed : JobState::kReady;
    return Code::kOk;
  }

  Code Touch(const std::string& id, uint64_t token, absl::Time now,
             absl::Time* deadline) {
    if (!Current(id, token)) return Code::kFailedPrecondition;
    Job& j = jobs_[id].job;
    j.deadline = now + j.ttr;
    *deadline = j.deadline;
    return Code::kOk;
  }

  Code Cancel(const std::string& id) {
    return jobs_.erase(id) ? Code::kOk : Code::kNotFound;
  }

  int Kick(const std::string& topic, absl::Time now) {
    int moved = 0;
    for (auto& [id, m] : jobs_) {
      if (m.job.topic == topic && m.job.state == JobState::kDead) {
        Revive(m, now);
        ++moved;
      }
    }
    return moved;
  }

  Code KickJob(const std::string& id, absl::Time now) {
    auto it = jobs_.find(id);
    if (it == jobs_.end()) return Code::kNotFound;
    if (it->second.job.state != JobState::kDead) {
      return Code::kFailedPrecondition;
    }
    Revive(it->second, now);
    return Code::kOk;
  }

  // Everything PromoteDue() loops would move, as sorted descriptions.
  std::vector<std::string> PromoteAll(absl::Time now) {
    std::vector<std::string> moved;
    for (auto& [id, m] : jobs_) {
      if (!IsDue(m, now)) continue;
      const char* kind = m.job.state == JobState::kDelayed     ? "promoted"
                         : m.job.attempts < m.job.max_attempts ? "expired"
                                                               : "dead";
      MoveDue(m);
      moved.push_back(
          absl::StrCat(kind, " ", id, " ", m.job.topic, " ", m.job.attempts));
    }
    std::sort(moved.begin(), moved.end());
    return moved;
  }

  absl::Time NextDue() const {
    absl::Time next = absl::InfiniteFuture();
    for (const auto& [id, m] : jobs_) {
      if (m.job.state == JobState::kDelayed)
        next = std::min(next, m.job.run_at);
      if (m.job.state == JobState::kReserved) {
        next = std::min(next, m.job.deadline);
      }
    }
    return next;
  }

  const ModelJob* Find(const std::string& id) const {
    auto it = jobs_.find(id);
    return it == jobs_.end() ? nullptr : &it->second;
  }

  TopicStats Stats(const std::string& topic) const {
    TopicStats s;
    for (const auto& [id, m] : jobs_) {
      if (m.job.topic != topic) continue;
      switch (m.job.state) {
        case JobState::kDelayed:
          s.delayed++;
          break;
        case JobState::kReady:
          s.ready++;
          break;
        case JobState::kReserved:
          s.reserved++;
          break;
        case JobState::kDead:
          s.dead++;
          break;
        case JobState::kDone:  // the model's jobs have no keep_for
          s.done++;
          break;
        case JobState::kWaiting:  // nor dependencies
          s.waiting++;
          break;
      }
    }
    return s;
  }

  std::vector<std::string> Topics() const {
    std::vector<std::string> topics;
    for (const auto& [id, m] : jobs_) topics.push_back(m.job.topic);
    std::sort(topics.begin(), topics.end());
    topics.erase(std::unique(topics.begin(), topics.end()), topics.end());
    return topics;
  }

  // The ids of a topic's jobs in `state`: in ready order for kReady,
  // sorted by id otherwise (the contract leaves ties open there).
  std::vector<std::string> ListIds(const std::string& topic,
                                   JobState state) const {
    std::vector<const ModelJob*> found;
    for (const auto& [id, m] : jobs_) {
      if (m.job.topic == topic && m.job.state == state) found.push_back(&m);
    }
    std::sort(found.begin(), found.end(),
              [state](const ModelJob* a, const ModelJob* b) {
                if (state == JobState::kReady) {
                  return std::tie(a->job.priority, a->job.run_at, a->seq) <
                         std::tie(b->job.priority, b->job.run_at, b->seq);
                }
                return a->job.id < b->job.id;
              });
    std::vector<std::string> ids;
    for (const ModelJob* m : found) ids.push_back(m->job.id);
    return ids;
  }

 private:
  static bool IsDue(const ModelJob& m, absl::Time now) {
    return (m.job.state == JobState::kDelayed && m.job.run_at <= now) ||
           (m.job.state == JobState::kReserved && m.job.deadline <= now);
  }

  void MoveDue(ModelJob& m) {
    if (m.job.state == JobState::kReserved &&
        m.job.attempts >= m.job.max_attempts) {
      m.job.last_error = "lease expired";
      Kill(m);
    } else {
      m.job.state = JobState::kReady;
    }
    m.job.deadline = absl::InfinitePast();
  }

  void Kill(ModelJob& m) {
    m.job.state = JobState::kDead;
    m.job.deadline = absl::InfinitePast();
    m.death = next_death_++;
  }

  void Revive(ModelJob& m, absl::Time now) {
    m.job.state = JobState::kReady;
    m.job.attempts = 0;
    m.job.run_at = now;
  }

  bool Current(const std::string& id, uint64_t token) const {
    auto it = jobs_.find(id);
    return it != jobs_.end() && it->second.job.state == JobState::kReserved &&
           it->second.token == token;
  }

  std::map<std::string, ModelJob> jobs_;
  uint64_t next_seq_ = 1;
  uint64_t next_death_ = 1;
};

std::string Describe(const Job& j) {
  return absl::StrCat(j.id, " topic=", j.topic, " payload=", j.payload,
                      " state=", JobStateName(j.state), " prio=", j.priority,
                      " attempts=", j.attempts, "/", j.max_attempts,
                      " ttr=", absl::FormatDuration(j.ttr),
                      " backoff=", static_cast<int>(j.backoff.kind), ":",
                      absl::FormatDuration(j.backoff.base), ":",
                      absl::FormatDuration(j.backoff.max),
                      " enqueued=", absl::FormatTime(j.enqueued_at),
                      " run_at=", absl::FormatTime(j.run_at),
                      " deadline=", absl::FormatTime(j.deadline),
                      " error=", j.last_error);
}

class ModelRun {
 public:
  ModelRun(Backend& backend, uint64_t seed) : backend_(backend), rng_(seed) {}

  // Runs `steps` random operations, checking after each. Stops at the first
  // step with a failure so the log shows where the store diverged.
  void Run(int steps) {
    for (step_ = 0; step_ < steps; ++step_) {
      Step();
      if (::testing::Test::HasFailure()) return;
      CheckContents();
      if (::testing::Test::HasFailure()) return;
    }
  }

 private:
  static constexpr int kIds = 40;
  static constexpr int kTopics = 3;

  int Uniform(int lo, int hi) {  // [lo, hi]
    return std::uniform_int_distribution<int>(lo, hi)(rng_);
  }
  std::string Id() { return "{o}job" + std::to_string(Uniform(0, kIds - 1)); }
  std::string Topic(int i) { return "model.t" + std::to_string(i); }
  std::string AnyTopic() { return Topic(Uniform(0, kTopics - 1)); }
  // Whole milliseconds, often equal to each other so that ties happen.
  absl::Time Around(int lo_s, int hi_s) {
    return now_ + absl::Milliseconds(500 * Uniform(2 * lo_s, 2 * hi_s));
  }

  NewJob RandomJob(const std::string& id) {
    NewJob j;
    j.id = id;
    j.topic = AnyTopic();
    j.payload = absl::StrCat("p", step_, std::string(1, '\0'), id);
    j.priority = Uniform(0, 2);
    j.max_attempts = Uniform(1, 3);
    j.ttr = absl::Seconds(Uniform(1, 4));
    j.backoff = Uniform(0, 1) ? Backoff::Fixed(absl::Seconds(Uniform(1, 3)))
                              : Backoff::Exponential(absl::Milliseconds(250),
                                                     absl::Seconds(8));
    j.run_at = Around(-2, 4);
    return j;
  }

  void Step() {
    const int op = Uniform(0, 99);
    std::string what;
    if (op < 20) {
      std::vector<NewJob> jobs;
      const int n = Uniform(1, 3);
      for (int i = 0; i < n; ++i) jobs.push_back(RandomJob(Id()));
      what = "Add " + jobs[0].id + (n > 1 ? " +more" : "");
      SCOPED_TRACE(Where(what));
      EXPECT_EQ(backend_.Add(jobs, now_).code(), model_.Add(jobs, now_));
    } else if (op < 40) {
      const std::string topic = AnyTopic();
      const int max = Uniform(1, 3);
      what = "Reserve " + topic;
      SCOPED_TRACE(Where(what));
      absl::StatusOr<std::vector<Lease>> got =
          backend_.Reserve(topic, max, now_);
      ASSERT_OK(got.status());
      std::vector<std::string> want = model_.Reserve(topic, max, now_);
      std::vector<std::string> ids;
      for (const Lease& l : *got) {
        ids.push_back(l.job.id);
        EXPECT_EQ(l.deadline, l.job.deadline);
        EXPECT_EQ(l.job.state, JobState::kReserved);
        leases_.push_back({l.job.id, l.token});
        model_.SetToken(l.job.id, l.token);
      }
      ASSERT_EQ(ids, want);
      if (leases_.size() > 30) leases_.erase(leases_.begin());
    } else if (op < 70 && !leases_.empty()) {
      // A lease call with a lease that may be current or stale.
      const auto [id, token] = leases_[Uniform(0, leases_.size() - 1)];
      const int kind = Uniform(0, 3);
      what = absl::StrCat("Lease op ", kind, " on ", id, " token ", token);
      SCOPED_TRACE(Where(what));
      if (kind == 0) {
        EXPECT_EQ(backend_.Ack(id, token, /*result=*/"", now_).code(),
                  model_.Ack(id, token));
      } else if (kind == 1) {
        const absl::Time retry_at = Around(-1, 3);
        const std::string error = "error at step " + std::to_string(step_);
        FailOutcome want_outcome = FailOutcome::kRetry;
        const Code want =
            model_.Fail(id, token, error, retry_at, now_, &want_outcome);
        absl::StatusOr<FailOutcome> got =
            backend_.Fail(id, token, error, retry_at, now_);
        ASSERT_EQ(got.status().code(), want);
        if (got.ok()) {
          EXPECT_EQ(*got, want_outcome);
        }
      } else if (kind == 2) {
        const absl::Time run_at = Around(-1, 3);
        EXPECT_EQ(backend_.Release(id, token, run_at, now_).code(),
                  model_.Release(id, token, run_at, now_));
      } else {
        absl::Time want_deadline;
        const Code want = model_.Touch(id, token, now_, &want_deadline);
        absl::StatusOr<absl::Time> got = backend_.Touch(id, token, now_);
        ASSERT_EQ(got.status().code(), want);
        if (got.ok()) {
          EXPECT_EQ(*got, want_deadline);
        }
      }
    } else if (op < 76) {
      const std::string id = Id();
      what = "Cancel " + id;
      SCOPED_TRACE(Where(what));
      EXPECT_EQ(backend_.Cancel(id, now_).code(), model_.Cancel(id));
    } else if (op < 84) {
      const int limit = Uniform(1, 4);
      what = absl::StrCat("PromoteDue loop, limit ", limit);
      SCOPED_TRACE(Where(what));
      std::vector<std::string> moved;
      for (int calls = 0; calls < 1000; ++calls) {
        absl::StatusOr<PromoteResult> got = backend_.PromoteDue(now_, limit);
        ASSERT_OK(got.status());
        ASSERT_LE(static_cast<int>(got->transitions.size()), limit);
        for (const Transition& t : got->transitions) {
          const char* kind = t.kind == Transition::Kind::kPromoted  ? "promoted"
                             : t.kind == Transition::Kind::kExpired ? "expired"
                                                                    : "dead";
          moved.push_back(
              absl::StrCat(kind, " ", t.id, " ", t.topic, " ", t.attempts));
        }
        if (!got->more) break;
      }
      std::sort(moved.begin(), moved.end());
      EXPECT_EQ(moved, model_.PromoteAll(now_));
    } else if (op < 88) {
      const std::string topic = AnyTopic();
      what = "Kick " + topic;
      SCOPED_TRACE(Where(what));
      absl::StatusOr<int> got = backend_.Kick(topic, 1000, now_);
      ASSERT_OK(got.status());
      EXPECT_EQ(*got, model_.Kick(topic, now_));
    } else if (op < 91) {
      const std::string id = Id();
      what = "KickJob " + id;
      SCOPED_TRACE(Where(what));
      EXPECT_EQ(backend_.KickJob(id, now_).code(), model_.KickJob(id, now_));
    } else {
      now_ += absl::Milliseconds(500 * Uniform(0, 6));
    }
  }

  std::string Where(const std::string& what) const {
    return absl::StrCat("step ", step_, " at ", absl::FormatTime(now_), ": ",
                        what);
  }

  void CheckContents() {
    SCOPED_TRACE(Where("contents"));
    for (int i = 0; i < kIds; ++i) {
      const std::string id = "{o}job" + std::to_string(i);
      absl::StatusOr<Job> got = backend_.Get(id);
      const ModelJob* want = model_.Find(id);
      if (want == nullptr) {
        EXPECT_THAT(got, StatusIs(Code::kNotFound)) << id;
        continue;
      }
      ASSERT_TRUE(got.ok()) << id << ": " << got.status();
      EXPECT_EQ(Describe(*got), Describe(want->job));
    }
    absl::StatusOr<std::vector<std::string>> topics = backend_.Topics();
    ASSERT_OK(topics.status());
    EXPECT_EQ(*topics, model_.Topics());
    for (int t = 0; t < kTopics; ++t) {
      const std::string topic = Topic(t);
      absl::StatusOr<TopicStats> stats = backend_.Stats(topic);
      ASSERT_OK(stats.status());
      const TopicStats want = model_.Stats(topic);
      EXPECT_TRUE(*stats == want)
          << topic << " delayed " << stats->delayed << "/" << want.delayed
          << " ready " << stats->ready << "/" << want.ready << " reserved "
          << stats->reserved << "/" << want.reserved << " dead " << stats->dead
          << "/" << want.dead;
      for (JobState state : {JobState::kReady, JobState::kDelayed,
                             JobState::kReserved, JobState::kDead}) {
        CheckList(topic, state);
      }
    }
    absl::StatusOr<absl::Time> next = backend_.NextDue();
    ASSERT_OK(next.status());
    EXPECT_EQ(*next, model_.NextDue());
  }

  void CheckList(const std::string& topic, JobState state) {
    absl::StatusOr<std::vector<Job>> got = backend_.List(topic, state, 1000);
    ASSERT_OK(got.status());
    std::vector<std::string> ids;
    for (size_t i = 0; i < got->size(); ++i) {
      const Job& j = (*got)[i];
      ids.push_back(j.id);
      EXPECT_EQ(j.state, state) << j.id;
      if (i == 0) continue;
      const Job& prev = (*got)[i - 1];
      if (state == JobState::kDelayed) {
        EXPECT_LE(prev.run_at, j.run_at);
      }
      if (state == JobState::kReserved) {
        EXPECT_LE(prev.deadline, j.deadline);
      }
    }
    if (state != JobState::kReady) std::sort(ids.begin(), ids.end());
    EXPECT_EQ(ids, model_.ListIds(topic, state))
        << topic << " " << JobStateName(state);
  }

  Backend& backend_;
  std::mt19937_64 rng_;
  Model model_;
  absl::Time now_ = kT0;
  int step_ = 0;
  std::vector<std::pair<std::string, uint64_t>> leases_;
};

uint64_t ModelSeed() {
  const char* env = std::getenv("DELAYQ_MODEL_SEED");
  return env != nullptr ? std::strtoull(env, nullptr, 10) : 20240611;
}

// The store's steps, or DELAYQ_MODEL_STEPS for a longer (or shorter) run.
int ModelSteps(const BackendFactory& store) {
  const char* env = std::getenv("DELAYQ_MODEL_STEPS");
  return env != nullptr ? std::atoi(env) : store.model_steps;
}

TEST_P(BackendConformanceTest, RandomOperationsMatchTheReferenceModel) {
  const uint64_t seed = ModelSeed();
  std::cout << "model seed " << seed << " (DELAYQ_MODEL_SEED to replay)\n";
  RecordProperty("model_seed", std::to_string(seed));
  SCOPED_TRACE(absl::StrCat("model seed ", seed));
  ModelRun run(*backend_, seed);
  run.Run(ModelSteps(GetParam()));
}

}  // namespace
}  // namespace testing
}  // namespace delayq
