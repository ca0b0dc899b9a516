// Copyright delayq authors.
//
// settled_list.h — how the stores that settle dependants in C++ (memory,
// SQLite, PostgreSQL) report them to the call that asked (Backend's
// `settled`, see Settled in delayq/backend.h).

#ifndef DELAYQ_SRC_COMMON_SETTLED_LIST_H_
#define DELAYQ_SRC_COMMON_SETTLED_LIST_H_

#include <cstdint>
#include <vector>

#include "absl/strings/string_view.h"
#include "delayq/backend.h"

namespace delayq {
namespace internal {

// Appends to `to`, when it is not null, that job `id` of `topic` was
// settled as `kind` (with `error` for kDead).
void NoteSettled(std::vector<Settled>* to, Settled::Kind kind,
                 absl::string_view id, absl::string_view topic,
                 absl::string_view error = "");

// Appends `from` to `to`, when it is not null.
void AppendSettled(std::vector<Settled> from, std::vector<Settled>* to);

// What a waiting job released at `now_us` becomes: kReady, or kDelayed
// while its run_at is still to come.
inline Settled::Kind ReleasedAs(int64_t run_at_us, int64_t now_us) {
  return run_at_us > now_us ? Settled::Kind::kDelayed : Settled::Kind::kReady;
}

// Points a store's report slot at one call's list (or at none) for the
// scope's life. A store settles dependants deep inside a transition;
// the slot spares every helper on the way a parameter.
class SettledTo {
 public:
  SettledTo(std::vector<Settled>** slot, std::vector<Settled>* to)
      : slot_(slot) {
    *slot_ = to;
  }
  SettledTo(const SettledTo&) = delete;
  SettledTo& operator=(const SettledTo&) = delete;
  ~SettledTo() { *slot_ = nullptr; }

 private:
  std::vector<Settled>** slot_;
};

}  // namespace internal
}  // namespace delayq

#endif  // DELAYQ_SRC_COMMON_SETTLED_LIST_H_
