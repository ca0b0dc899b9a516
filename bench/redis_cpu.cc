// Copyright delayq authors.

#include "bench/redis_cpu.h"

#include <hiredis/hiredis.h>

#include <cstdio>
#include <cstdlib>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"

namespace delayq {
namespace bench {

double RedisCpuSeconds(const std::string& host, int port) {
  redisContext* c = redisConnect(host.c_str(), port);
  if (c == nullptr || c->err != 0) {
    fprintf(stderr, "INFO cpu: cannot connect to %s:%d\n", host.c_str(), port);
    abort();
  }
  auto* r = static_cast<redisReply*>(redisCommand(c, "INFO cpu"));
  double total = 0;
  int found = 0;
  if (r != nullptr && r->type == REDIS_REPLY_STRING) {
    for (absl::string_view line :
         absl::StrSplit(absl::string_view(r->str, r->len), '\n')) {
      double v = 0;
      for (absl::string_view name : {"used_cpu_user:", "used_cpu_sys:"}) {
        if (absl::ConsumePrefix(&line, name) &&
            absl::SimpleAtod(absl::StripTrailingAsciiWhitespace(line), &v)) {
          total += v;
          ++found;
        }
      }
    }
  }
  if (r != nullptr) freeReplyObject(r);
  redisFree(c);
  if (found != 2) {
    fprintf(stderr, "INFO cpu of %s:%d has no used_cpu_user/sys\n",
            host.c_str(), port);
    abort();
  }
  return total;
}

}  // namespace bench
}  // namespace delayq
