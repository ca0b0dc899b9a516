// Copyright delayq authors.

#include "backends/postgres/internal/pool.h"

namespace delayq {
namespace postgres_internal {

absl::StatusOr<std::unique_ptr<Connection>> Pool::Take(bool* reused) {
  {
    internal::MutexLock lock(&mu_);
    if (!idle_.empty()) {
      std::unique_ptr<Connection> conn = std::move(idle_.back());
      idle_.pop_back();
      *reused = true;
      return conn;
    }
  }
  *reused = false;
  return Connect();
}

absl::StatusOr<std::unique_ptr<Connection>> Pool::Connect() const {
  return Connection::Open(params_, where_, answer_timeout_);
}

void Pool::Give(std::unique_ptr<Connection> conn) {
  if (conn == nullptr || conn->Broken() || conn->InTransaction()) return;
  internal::MutexLock lock(&mu_);
  if (static_cast<int>(idle_.size()) < max_idle_) {
    idle_.push_back(std::move(conn));
  }
}

void Pool::DropIdle() {
  std::vector<std::unique_ptr<Connection>> dropped;
  {
    internal::MutexLock lock(&mu_);
    dropped.swap(idle_);
  }
  // Closed here, outside the lock.
}

}  // namespace postgres_internal
}  // namespace delayq
