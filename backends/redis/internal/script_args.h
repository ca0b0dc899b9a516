// Copyright delayq authors.
//
// script_args.h — what the generated internal/script_calls.h builds on. For
// each script, embed_scripts.sh writes a struct of its keys and arguments,
// one member per line of the script's header, named by that line, and a
// ToCall() that lays the members out in the declared order:
//
//   // fail-4.lua
//   struct FailArgs {
//     static constexpr char kScript[] = "fail";
//     std::optional<std::string> prefix;  // KEYS[1] key prefix "{ns}:"
//     ...
//     std::optional<std::string> error;     // ARGV[6] error text
//     std::optional<std::string> retry_at;  // ARGV[7] µs, caller's clock
//   };
//   absl::StatusOr<Scripts::Call> ToCall(FailArgs a);
//
// A caller sets the members by name and never spells a position:
//
//   FailArgs a;
//   a.prefix = keys.prefix();
//   ...
//   a.error = std::string(error);
//   DQ_ASSIGN_OR_RETURN(Scripts::Call call, ToCall(std::move(a)));
//
// A member left unset makes ToCall() return Internal naming it, before
// anything is sent. A header's list ("-- ARGV[n..]") is an ArgList member,
// which may stay empty.

#ifndef DELAYQ_BACKENDS_REDIS_INTERNAL_SCRIPT_ARGS_H_
#define DELAYQ_BACKENDS_REDIS_INTERNAL_SCRIPT_ARGS_H_

#include <cstddef>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "backends/redis/client/connection.h"

namespace delayq {
namespace redis_internal {

// ArgList
//
// The arguments after the declared ones: `values`, then `encoded_count`
// arguments already encoded with AppendArgument() in `encoded` (a batch of
// jobs is written once, straight into the request, instead of being built
// as strings and copied).
struct ArgList {
  std::vector<std::string> values;
  std::string encoded;
  size_t encoded_count = 0;
};

// CallBuilder
//
// Lays out one call, key by key and argument by argument, in the order of
// the calls to Key() and Arg(); ToCall() makes those calls in the order the
// script's header declares. Each call moves the member out.
class CallBuilder {
 public:
  CallBuilder(absl::string_view script, size_t keys, size_t args);

  void Key(const char* name, std::optional<std::string>* value);
  void Arg(const char* name, std::optional<std::string>* value);
  void List(ArgList* list);

  // The call; Internal, naming the first member left unset, if one was.
  absl::StatusOr<Scripts::Call> Done() &&;

 private:
  // Moves `value` to the end of `out`, or notes `name` at `where` unset.
  void Take(const char* where, const char* name,
            std::optional<std::string>* value, std::vector<std::string>* out);

  Scripts::Call call_;
  std::string unset_;  // the first member left unset, e.g. "ARGV[6] error"
};

// Whether a generated struct has a key member `jobs`, `reserved` or `due`:
// those names mean "{ns}:jobs", "{ns}:reserved" and "{ns}:due" in every
// script that takes them, so one helper may set them for any call.
template <typename Args, typename = void>
struct HasJobsKey : std::false_type {};
template <typename Args>
struct HasJobsKey<Args, std::void_t<decltype(Args::jobs)>> : std::true_type {};
template <typename Args, typename = void>
struct HasReservedKey : std::false_type {};
template <typename Args>
struct HasReservedKey<Args, std::void_t<decltype(Args::reserved)>>
    : std::true_type {};
template <typename Args, typename = void>
struct HasDueKey : std::false_type {};
template <typename Args>
struct HasDueKey<Args, std::void_t<decltype(Args::due)>> : std::true_type {};

}  // namespace redis_internal
}  // namespace delayq

#endif  // DELAYQ_BACKENDS_REDIS_INTERNAL_SCRIPT_ARGS_H_
