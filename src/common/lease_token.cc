// Copyright delayq authors.

#include "src/common/lease_token.h"

#include <pthread.h>
#include <sys/random.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>

namespace delayq {
namespace internal {
namespace {

// Each thread keeps a few draws of the kernel's generator, so that a
// Reserve costs a system call only once in kBatch calls.
constexpr int kBatch = 32;

// Bumped in a child after fork(): a buffer inherited from the parent would
// hand out the parent's coming tokens.
std::atomic<uint64_t> fork_generation{0};

void OnFork() { fork_generation.fetch_add(1, std::memory_order_relaxed); }

struct Buffer {
  uint64_t values[kBatch];
  int next = kBatch;
  uint64_t generation = 0;
};

void Fill(Buffer* b) {
  static const bool registered = [] {
    pthread_atfork(nullptr, nullptr, OnFork);
    return true;
  }();
  (void)registered;
  char* out = reinterpret_cast<char*>(b->values);
  size_t left = sizeof(b->values);
  while (left > 0) {
    const ssize_t n = getrandom(out, left, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      // No secure source: a predictable token would break fencing, and no
      // kernel that runs delayq lacks getrandom(2).
      std::perror("delayq: getrandom");
      std::abort();
    }
    out += n;
    left -= static_cast<size_t>(n);
  }
  b->next = 0;
  b->generation = fork_generation.load(std::memory_order_relaxed);
}

}  // namespace

uint64_t NewFirstLeaseToken() {
  thread_local Buffer buffer;
  while (true) {
    if (buffer.next == kBatch ||
        buffer.generation != fork_generation.load(std::memory_order_relaxed)) {
      Fill(&buffer);
    }
    // The low 52 bits of a uniform 64-bit draw are uniform; 0 is no token.
    const uint64_t token = buffer.values[buffer.next++] % kLeaseTokenLimit;
    if (token != 0) return token;
  }
}

}  // namespace internal
}  // namespace delayq
