// Copyright delayq authors.
//
// The mutex every store uses, with thread-safety annotations so that
// -Wthread-safety checks ABSL_GUARDED_BY where the compiler offers it.
//
// Why not absl::Mutex: the Debian Abseil is not built with ThreadSanitizer,
// so a TSan build that links it cannot see absl::Mutex's happens-before
// edges; std::mutex (pthreads) is intercepted by TSan in every build.

#ifndef DELAYQ_SRC_COMMON_MUTEX_H_
#define DELAYQ_SRC_COMMON_MUTEX_H_

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"

namespace delayq {
namespace internal {

class ABSL_LOCKABLE Mutex {
 public:
  void Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() { mu_.lock(); }
  void Unlock() ABSL_UNLOCK_FUNCTION() { mu_.unlock(); }

 private:
  friend class CondVar;
  std::mutex mu_;
};

class ABSL_SCOPED_LOCKABLE MutexLock {
 public:
  explicit MutexLock(Mutex* mu) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu) : mu_(mu) {
    mu_->Lock();
  }
  ~MutexLock() ABSL_UNLOCK_FUNCTION() { mu_->Unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex* mu_;
};

// A condition variable over Mutex. Wait* release `mu` while they wait and
// hold it again when they return; they may return spuriously.
class CondVar {
 public:
  void Wait(Mutex* mu) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    std::unique_lock<std::mutex> lock(mu->mu_, std::adopt_lock);
    cv_.wait(lock);
    lock.release();
  }

  // False when `deadline` passed.
  bool WaitUntil(Mutex* mu, absl::Time deadline)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    std::unique_lock<std::mutex> lock(mu->mu_, std::adopt_lock);
    const std::cv_status status =
        cv_.wait_until(lock, absl::ToChronoTime(deadline));
    lock.release();
    return status == std::cv_status::no_timeout;
  }

  // False when `deadline` (of the steady clock) passed.
  bool WaitUntil(Mutex* mu, std::chrono::steady_clock::time_point deadline)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    std::unique_lock<std::mutex> lock(mu->mu_, std::adopt_lock);
    const std::cv_status status = cv_.wait_until(lock, deadline);
    lock.release();
    return status == std::cv_status::no_timeout;
  }

  void Signal() { cv_.notify_one(); }
  void SignalAll() { cv_.notify_all(); }

 private:
  std::condition_variable cv_;
};

}  // namespace internal
}  // namespace delayq

#endif  // DELAYQ_SRC_COMMON_MUTEX_H_
