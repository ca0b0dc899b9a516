// Copyright delayq authors.
//
// The cursor of a paged job list (Backend::ListPage()): the one codec every
// store uses. A cursor names a position in one state's list order: "after
// the job whose ordering key is `parts`". What the parts are is the store's
// business (a sequence number, a time and an id, a Redis member); what this
// codec guarantees is the envelope around them, so that every store refuses
// a malformed cursor the same way and no store ever parses raw text from
// outside.
//
// Cursors come from outside (an HTTP query, a command line): Decode checks
// the length, the encoding, the version, the state and the number of parts,
// and a store then checks each part's form before it uses it.

#ifndef DELAYQ_SRC_COMMON_LIST_CURSOR_H_
#define DELAYQ_SRC_COMMON_LIST_CURSOR_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "delayq/job.h"

namespace delayq {
namespace internal {

// The longest cursor text accepted: generous for any store's key (a sharded
// Redis namespace nests one cursor per shard), small enough to bound the
// work a hostile one causes.
inline constexpr size_t kMaxListCursorBytes = 16 * 1024;

// ListCursor
//
// A position in the list of a topic's jobs in `state`: after the job whose
// ordering key is `parts`.
struct ListCursor {
  JobState state = JobState::kReady;
  std::vector<std::string> parts;
};

// EncodeListCursor()
//
// The opaque, URL-safe text of `cursor` (letters, digits, '-' and '_').
std::string EncodeListCursor(const ListCursor& cursor);

// DecodeListCursor()
//
// The cursor that EncodeListCursor() made `text` from. InvalidArgument,
// with a message that says what is wrong, when `text` is not such a cursor,
// when it is one of another state's list than `state`, or when it has not
// exactly `parts` parts.
absl::StatusOr<ListCursor> DecodeListCursor(absl::string_view text,
                                            JobState state, size_t parts);

// CursorInt()
//
// Part `part` of a decoded cursor as an int64; InvalidArgument when it is
// not the decimal text of one.
absl::StatusOr<int64_t> CursorInt(const ListCursor& cursor, size_t part);

// KeysetSize()
//
// How many integers the memory, SQLite and PostgreSQL stores order the list
// of `state` by (and so how many parts their cursors have): ready by
// (priority, run_at, enqueue order), delayed by (run_at, enqueue order),
// reserved by (deadline, enqueue order), dead by death order, done by
// (time to leave, acknowledgement order), waiting by enqueue order.
size_t KeysetSize(JobState state);

// EncodeIntCursor(), DecodeIntCursor()
//
// A cursor whose parts are the integers `key` (a store whose order is a
// tuple of integers: a time, a priority, a sequence number), and back;
// DecodeIntCursor() fails as DecodeListCursor() does, with `size` parts, and
// when a part is not an integer.
std::string EncodeIntCursor(JobState state, const std::vector<int64_t>& key);
absl::StatusOr<std::vector<int64_t>> DecodeIntCursor(absl::string_view text,
                                                     JobState state,
                                                     size_t size);

}  // namespace internal
}  // namespace delayq

#endif  // DELAYQ_SRC_COMMON_LIST_CURSOR_H_
