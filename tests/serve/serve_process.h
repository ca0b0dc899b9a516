// Copyright delayq authors.
//
// `delayq serve` as a child process on a free loopback port, and a small
// JSON client for it: what the HTTP tests and benchmarks talk to.

#ifndef DELAYQ_TESTS_SERVE_SERVE_PROCESS_H_
#define DELAYQ_TESTS_SERVE_SERVE_PROCESS_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "httplib.h"
#include "nlohmann/json.hpp"
#include "tests/testing/child_process.h"

namespace delayq {
namespace testing {

using Json = nlohmann::json;

// The built delayq program in the runfiles.
std::string DelayqBinary();

// A running `delayq serve --store URL --listen 127.0.0.1:0 ARGS...`.
class ServeProcess {
 public:
  // Starts it and waits until it listens. Fails when it exits first. Its
  // stderr goes to `stderr_path` when given, else to the test's.
  static absl::StatusOr<std::unique_ptr<ServeProcess>> Start(
      const std::string& store_url, std::vector<std::string> args = {},
      const std::string& stderr_path = "");

  int port() const { return port_; }
  pid_t pid() const { return child_.pid(); }

  // SIGTERM, then waits; returns the wait status.
  int Stop();

 private:
  explicit ServeProcess(const std::vector<std::string>& argv) : child_(argv) {}

  ChildProcess child_;
  int port_ = 0;
};

// One reply: its HTTP status and its body, parsed when it is JSON.
struct HttpReply {
  int status = 0;  // 0: no reply (connection failed)
  std::string body;
  Json json;
  std::string allow;  // the Allow header of a 405
  std::string code() const { return json.value("code", ""); }
};

// A keep-alive JSON client of one server.
class ApiClient {
 public:
  explicit ApiClient(int port, std::string token = "");

  HttpReply Get(const std::string& path);
  HttpReply Post(const std::string& path, const Json& body);
  HttpReply PostRaw(const std::string& path, const std::string& body);
  HttpReply Put(const std::string& path, const Json& body);
  HttpReply Delete(const std::string& path);

 private:
  HttpReply Reply(const httplib::Result& result);

  httplib::Client client_;
  httplib::Headers headers_;
};

}  // namespace testing
}  // namespace delayq

#endif  // DELAYQ_TESTS_SERVE_SERVE_PROCESS_H_
