// Copyright delayq authors.
//
// The server's threads: one per open connection, started when a connection
// arrives and no thread is idle, up to a limit, and ended after a while
// without work. A connection keeps its thread while it is kept alive, and a
// long-polling reserve waits on it, so the pool grows with the clients
// rather than queueing them behind a fixed number of threads. Threads get a
// small stack so that a thousand waiting clients cost little memory.

#ifndef DELAYQ_TOOLS_SERVE_HTTP_CONNECTION_THREADS_H_
#define DELAYQ_TOOLS_SERVE_HTTP_CONNECTION_THREADS_H_

#include <cstddef>
#include <deque>
#include <functional>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace delayq {
namespace serve {

class ConnectionThreads {
 public:
  // At most `max_threads` at once; connections past that wait for a thread.
  ConnectionThreads(int max_threads, size_t stack_bytes,
                    absl::Duration idle_exit = absl::Seconds(30));
  ~ConnectionThreads();  // Shutdown()
  ConnectionThreads(const ConnectionThreads&) = delete;
  ConnectionThreads& operator=(const ConnectionThreads&) = delete;

  void Enqueue(std::function<void()> fn);

  // Runs what is queued, then returns once every thread has ended.
  void Shutdown();

  int threads() const;

 private:
  static void* Main(void* self);
  void Work();

  const int max_threads_;
  const size_t stack_bytes_;
  const absl::Duration idle_exit_;
  mutable absl::Mutex mu_;
  absl::CondVar work_;
  absl::CondVar ended_;
  std::deque<std::function<void()>> tasks_ ABSL_GUARDED_BY(mu_);
  int threads_ ABSL_GUARDED_BY(mu_) = 0;
  int idle_ ABSL_GUARDED_BY(mu_) = 0;
  bool shutdown_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace serve
}  // namespace delayq

#endif  // DELAYQ_TOOLS_SERVE_HTTP_CONNECTION_THREADS_H_
