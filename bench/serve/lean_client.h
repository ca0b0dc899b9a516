// Copyright delayq authors.
//
// LeanClient — serve_bench's HTTP client: one kept-alive loopback
// connection, a request written with one send(), a reply read for its
// status and its Content-Length body, nothing parsed beyond that.
//
// Why: the benchmark's clients share the machine's cores with the server
// and redis-server. A client that parses every reserve's reply into a JSON
// tree (cpp-httplib's client with nlohmann-json: some 5 us of CPU a job)
// takes the cores from them and slows redis-server's scripts, which the
// server's side of the comparison then pays and the library's does not
// (bench/README.md, "HTTP server").

#ifndef DELAYQ_BENCH_SERVE_LEAN_CLIENT_H_
#define DELAYQ_BENCH_SERVE_LEAN_CLIENT_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"

namespace delayq {
namespace bench {

class LeanClient {
 public:
  explicit LeanClient(int port);  // connects to 127.0.0.1:port
  ~LeanClient();
  LeanClient(const LeanClient&) = delete;
  LeanClient& operator=(const LeanClient&) = delete;

  // POSTs `body` (JSON) to `path` and returns the reply's status, its body
  // in *reply; 0 when the connection failed.
  int Post(absl::string_view path, absl::string_view body, std::string* reply);

 private:
  bool Receive();

  int fd_ = -1;
  std::string in_;  // received and not yet taken
};

// Leases named by (job id, token).
using LeaseIds = std::vector<std::pair<std::string, std::string>>;

// The job id and token of each lease in a reserve's reply, found by their
// keys: a JSON string holds no unescaped quote, so `"id":"` and
// `"token":"` occur only as keys, and a lease's job has one id.
LeaseIds LeasesIn(absl::string_view reply);

}  // namespace bench
}  // namespace delayq

#endif  // DELAYQ_BENCH_SERVE_LEAN_CLIENT_H_
