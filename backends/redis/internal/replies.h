// Copyright delayq authors.
//
// The scripts' replies as the C++ side reads them. Every script replies with
// an array whose first element is a status word; the words each script may
// send, and the order of the fields in a job snapshot, a lease and a
// transition, are named here once. A test reads the scripts' "-- Reply:"
// headers and lib/snapshot.lua and checks that they agree with these lists.

#ifndef DELAYQ_BACKENDS_REDIS_INTERNAL_REPLIES_H_
#define DELAYQ_BACKENDS_REDIS_INTERNAL_REPLIES_H_

#include <hiredis/hiredis.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "delayq/backend.h"

namespace delayq {
namespace redis_internal {

// Status words.
inline constexpr char kOk[] = "OK";
inline constexpr char kStale[] = "STALE";
inline constexpr char kNotFound[] = "NOTFOUND";
inline constexpr char kNotDead[] = "NOTDEAD";
inline constexpr char kNotDelayed[] = "NOTDELAYED";
inline constexpr char kExists[] = "EXISTS";
// add: a job waits for one that is neither stored nor earlier in its batch.
inline constexpr char kNoDependency[] = "NODEP";
// add, batch_close: no batch has the id; add: the batch is closed.
inline constexpr char kNoBatch[] = "NOBATCH";
inline constexpr char kClosed[] = "CLOSED";
// shard_meta: the namespace records another shard count or index.
inline constexpr char kOtherShards[] = "SHARDS";
inline constexpr char kRetry[] = "RETRY";
inline constexpr char kDead[] = "DEAD";
inline constexpr char kOldLayout[] = "OLD_LAYOUT";
inline constexpr char kNewerLayout[] = "NEWER_LAYOUT";
inline constexpr char kBusy[] = "BUSY";
inline constexpr char kOtherTopic[] = "OTHERTOPIC";
inline constexpr char kMoved[] = "MOVED";

// The words each script may reply with, as its "-- Reply:" header lists
// them.
struct ScriptWords {
  const char* script;
  std::vector<const char*> words;
};
const std::vector<ScriptWords>& ReplyWords();

// The order of a job snapshot {id, SNAPSHOT_FIELDS...} (lib/snapshot.lua);
// the record is the job's (record.h).
inline constexpr const char* kSnapshotFields[] = {"id", "record"};
// The order of one lease in reserve's reply (reserve-3.lua); id, result
// pairs of its dependencies' results follow (lib/results.lua).
inline constexpr const char* kLeaseFields[] = {"record", "id"};
// The order of one {kind, id, topic, attempts} entry of promote_due and
// reserve; the settled entries of the jobs the move settled follow.
inline constexpr const char* kTransitionFields[] = {"kind", "id", "topic",
                                                    "attempts"};
// The order of one settled entry {word, state, id, topic, error}, whose
// word is "settled" (lib/settled.lua).
inline constexpr const char* kSettledFields[] = {"word", "state", "id", "topic",
                                                 "error"};

// The position of `name` in `fields`, at compile time; N when absent, which
// no reply has, so a misspelt name fails the reply's size check.
template <size_t N>
constexpr size_t FieldAt(const char* const (&fields)[N], const char* name) {
  for (size_t i = 0; i < N; ++i) {
    const char* a = fields[i];
    const char* b = name;
    while (*a != '\0' && *a == *b) ++a, ++b;
    if (*a == *b) return i;
  }
  return N;
}

// Reply elements as values.
std::string Str(const redisReply* r);
int64_t Int(const redisReply* r);
// An empty element is "never" (InfinitePast).
absl::Time TimeOf(const redisReply* r);
// The status word: the first element of the array every script returns.
std::string Word(const redisReply* r);
absl::Status Unexpected(const redisReply* r, absl::string_view script);

// A snapshot as a lease (token and deadline as stored).
// Also the reply of HGET "{ns}:jobs" id given as a snapshot's record.
absl::StatusOr<Lease> ParseSnapshot(const redisReply* r);
// The snapshots of a reply {"OK", snapshot...}.
absl::StatusOr<std::vector<Lease>> ParseSnapshots(const redisReply* r,
                                                  absl::string_view script);
// One lease of reserve's reply.
absl::StatusOr<Lease> ParseLease(const redisReply* r);
// One transition; the jobs it settled are appended to `settled` when it
// is not null.
absl::StatusOr<Transition> ParseTransition(const redisReply* t,
                                           absl::string_view script,
                                           std::vector<Settled>* settled);
// Whether `r` is a settled entry (lib/settled.lua).
bool IsSettled(const redisReply* r);
// One settled entry. REQUIRES: IsSettled(r).
absl::StatusOr<Settled> ParseSettled(const redisReply* r,
                                     absl::string_view script);
// Appends the settled entries among reply elements [first, end) to
// `settled` (when not null); an element of another shape is Unexpected.
absl::Status ParseSettledFrom(const redisReply* reply, size_t first,
                              absl::string_view script,
                              std::vector<Settled>* settled);

// Times travel as integer microseconds; scripts hold them in Lua doubles,
// exact to 2^53, so they are clamped to +-2^52 µs (about 142 years around
// 1970), which also maps the infinite times to finite ones.
int64_t ClampMicros(absl::Time t);
int64_t DurationMicros(absl::Duration d);

}  // namespace redis_internal
}  // namespace delayq

#endif  // DELAYQ_BACKENDS_REDIS_INTERNAL_REPLIES_H_
