// Copyright delayq authors.
//
// The reader that turns a server's bytes into reply trees: hiredis's own
// parser, with reply objects of delayq's making.
//
// hiredis allocates an array's whole element vector when it reads the
// array's header, before a single element has arrived. A server (or
// anything in its place) that sends "*2000000000\r\n" would make the
// client allocate 16 GB for eleven bytes. Here an array's vector grows as
// its elements arrive instead, so the memory a reply takes stays in
// proportion to the bytes received. The trees are ordinary redisReply
// trees: freeReplyObject() frees them.

#ifndef DELAYQ_BACKENDS_REDIS_CLIENT_REPLY_READER_H_
#define DELAYQ_BACKENDS_REDIS_CLIENT_REPLY_READER_H_

#include <hiredis/read.h>

namespace delayq {
namespace redis_internal {

// A new reader, or nullptr when memory is short. Free it with
// redisReaderFree().
redisReader* NewReplyReader();

}  // namespace redis_internal
}  // namespace delayq

#endif  // DELAYQ_BACKENDS_REDIS_CLIENT_REPLY_READER_H_
