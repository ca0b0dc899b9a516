// Copyright delayq authors.
//
// The Lua scripts of the Redis backend, embedded at build time from
// scripts/<name>-<numkeys>.lua, each preceded by the helpers from
// scripts/lib/ that it names on its "-- requires:" line.

#ifndef DELAYQ_BACKENDS_REDIS_INTERNAL_SCRIPTS_H_
#define DELAYQ_BACKENDS_REDIS_INTERNAL_SCRIPTS_H_

#include "backends/redis/client/script_source.h"

namespace delayq {
namespace redis_internal {

extern const ScriptSource kScriptSources[];
extern const int kScriptSourceCount;

}  // namespace redis_internal
}  // namespace delayq

#endif  // DELAYQ_BACKENDS_REDIS_INTERNAL_SCRIPTS_H_
