// Copyright delayq authors.

#include "backends/redis/client/reply_reader.h"

#include <hiredis/hiredis.h>

#include <cstdlib>
#include <cstring>

namespace delayq {
namespace redis_internal {
namespace {

redisReply* NewReply(int type) {
  auto* r = static_cast<redisReply*>(std::calloc(1, sizeof(redisReply)));
  if (r != nullptr) r->type = type;
  return r;
}

bool IsPowerOfTwo(size_t n) { return (n & (n - 1)) == 0; }

// Puts `child` in its parent's next place, growing the parent's vector
// when it is full. Elements arrive in order, so the count filled so far is
// the next place, and the vector's room is the count rounded up to a power
// of two: it doubles when the count reaches one. Returns `child`, or
// nullptr (with `child` freed) when memory is short.
void* Attach(const redisReadTask* task, redisReply* child) {
  if (child == nullptr || task->parent == nullptr) return child;
  auto* parent = static_cast<redisReply*>(task->parent->obj);
  const size_t n = parent->elements;
  if (IsPowerOfTwo(n)) {
    const size_t room = n == 0 ? 1 : 2 * n;
    void* grown = std::realloc(parent->element, room * sizeof(redisReply*));
    if (grown == nullptr) {
      freeReplyObject(child);
      return nullptr;
    }
    parent->element = static_cast<redisReply**>(grown);
  }
  parent->element[n] = child;
  parent->elements = n + 1;
  return child;
}

void* CreateString(const redisReadTask* task, char* text, size_t len) {
  redisReply* r = NewReply(task->type);
  if (r == nullptr) return nullptr;
  r->str = static_cast<char*>(std::malloc(len + 1));
  if (r->str == nullptr) {
    std::free(r);
    return nullptr;
  }
  std::memcpy(r->str, text, len);
  r->str[len] = '\0';
  r->len = len;
  return Attach(task, r);
}

// The element count the header announces is not trusted: the vector
// starts empty (see Attach).
void* CreateArray(const redisReadTask* task, int /*announced*/) {
  return Attach(task, NewReply(REDIS_REPLY_ARRAY));
}

void* CreateInteger(const redisReadTask* task, long long value) {
  redisReply* r = NewReply(REDIS_REPLY_INTEGER);
  if (r != nullptr) r->integer = value;
  return Attach(task, r);
}

void* CreateNil(const redisReadTask* task) {
  return Attach(task, NewReply(REDIS_REPLY_NIL));
}

redisReplyObjectFunctions kReplyFunctions = {
    CreateString, CreateArray, CreateInteger, CreateNil, freeReplyObject};

}  // namespace

redisReader* NewReplyReader() {
  return redisReaderCreateWithFunctions(&kReplyFunctions);
}

}  // namespace redis_internal
}  // namespace delayq
