// Copyright delayq authors.

#include "tools/serve/http/connection_threads.h"

#include <pthread.h>

#include <utility>

namespace delayq {
namespace serve {

ConnectionThreads::ConnectionThreads(int max_threads, size_t stack_bytes,
                                     absl::Duration idle_exit)
    : max_threads_(max_threads),
      stack_bytes_(stack_bytes),
      idle_exit_(idle_exit) {}

ConnectionThreads::~ConnectionThreads() { Shutdown(); }

void ConnectionThreads::Enqueue(std::function<void()> fn) {
  absl::MutexLock lock(&mu_);
  tasks_.push_back(std::move(fn));
  if (idle_ >= static_cast<int>(tasks_.size()) || threads_ >= max_threads_) {
    work_.Signal();
    return;
  }
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, stack_bytes_);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_t thread;
  if (pthread_create(&thread, &attr, &ConnectionThreads::Main, this) == 0) {
    ++threads_;
  } else {
    // No thread to spare: the task waits for one that finishes.
    work_.Signal();
  }
  pthread_attr_destroy(&attr);
}

void* ConnectionThreads::Main(void* self) {
  static_cast<ConnectionThreads*>(self)->Work();
  return nullptr;
}

void ConnectionThreads::Work() {
  absl::MutexLock lock(&mu_);
  for (;;) {
    ++idle_;
    while (tasks_.empty() && !shutdown_) {
      if (work_.WaitWithTimeout(&mu_, idle_exit_)) break;  // timed out
    }
    --idle_;
    if (tasks_.empty()) break;  // idle too long, or shutting down
    std::function<void()> task = std::move(tasks_.front());
    tasks_.pop_front();
    mu_.Unlock();
    task();
    task = nullptr;  // release what it holds before waiting again
    mu_.Lock();
  }
  --threads_;
  ended_.SignalAll();
}

void ConnectionThreads::Shutdown() {
  absl::MutexLock lock(&mu_);
  shutdown_ = true;
  work_.SignalAll();
  while (threads_ > 0 || !tasks_.empty()) {
    if (threads_ == 0) {
      // Queued with no thread to run it (creation failed): run it here.
      std::function<void()> task = std::move(tasks_.front());
      tasks_.pop_front();
      mu_.Unlock();
      task();
      mu_.Lock();
      continue;
    }
    ended_.Wait(&mu_);
  }
}

int ConnectionThreads::threads() const {
  absl::MutexLock lock(&mu_);
  return threads_;
}

}  // namespace serve
}  // namespace delayq
