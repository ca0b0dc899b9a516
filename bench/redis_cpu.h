// Copyright delayq authors.
//
// The CPU time a redis-server has used, for benchmarks that report the
// store's CPU per job beside their own.

#ifndef DELAYQ_BENCH_REDIS_CPU_H_
#define DELAYQ_BENCH_REDIS_CPU_H_

#include <string>

namespace delayq {
namespace bench {

// used_cpu_user + used_cpu_sys from INFO cpu of the server at
// host:port, in seconds; aborts when it cannot be read (a benchmark must not
// print a number it did not measure).
double RedisCpuSeconds(const std::string& host, int port);

}  // namespace bench
}  // namespace delayq

#endif  // DELAYQ_BENCH_REDIS_CPU_H_
