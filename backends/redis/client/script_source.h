// Copyright delayq authors.
//
// ScriptSource — a Lua script as a client is given it to load: the caller
// owns the scripts (the store embeds its own), the client loads and runs
// them by name (connection.h, Scripts) and refuses a call whose keys or
// arguments are not the ones the script declares.

#ifndef DELAYQ_BACKENDS_REDIS_CLIENT_SCRIPT_SOURCE_H_
#define DELAYQ_BACKENDS_REDIS_CLIENT_SCRIPT_SOURCE_H_

namespace delayq {
namespace redis_internal {

struct ScriptSource {
  const char* name;  // "add", "reserve", ...
  int num_keys;      // how many KEYS the script takes
  int num_args;      // how many ARGV it takes, at least when more_args
  bool more_args;    // whether a list of any length follows them
  const char* body;  // the Lua source
};

}  // namespace redis_internal
}  // namespace delayq

#endif  // DELAYQ_BACKENDS_REDIS_CLIENT_SCRIPT_SOURCE_H_
