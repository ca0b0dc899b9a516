// Copyright delayq authors.
//
// A mutex for the SQLite backend that ThreadSanitizer understands. The system
// Abseil is not built with ThreadSanitizer, so it cannot see absl::Mutex's
// happens-before edges; std::mutex (pthreads) is intercepted. The thread
// annotations keep -Wthread-safety checks where the compiler offers them.

#ifndef DELAYQ_BACKENDS_SQLITE_INTERNAL_MUTEX_H_
#define DELAYQ_BACKENDS_SQLITE_INTERNAL_MUTEX_H_

#include <mutex>

#include "absl/base/thread_annotations.h"

namespace delayq {
namespace sqlite_internal {

class ABSL_LOCKABLE Mutex {
 public:
  void Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() { mu_.lock(); }
  void Unlock() ABSL_UNLOCK_FUNCTION() { mu_.unlock(); }

 private:
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

}  // namespace sqlite_internal
}  // namespace delayq

#endif  // DELAYQ_BACKENDS_SQLITE_INTERNAL_MUTEX_H_
