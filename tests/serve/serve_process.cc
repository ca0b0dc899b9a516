// Copyright delayq authors.

#include "tests/serve/serve_process.h"

#include <signal.h>

#include <cstdlib>
#include <optional>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace delayq {
namespace testing {

std::string DelayqBinary() {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  if (srcdir != nullptr)
    return absl::StrCat(srcdir, "/delayq/tools/delayq/delayq");
  return "tools/delayq/delayq";
}

absl::StatusOr<std::unique_ptr<ServeProcess>> ServeProcess::Start(
    const std::string& store_url, std::vector<std::string> args,
    const std::string& stderr_path) {
  std::vector<std::string> argv = {DelayqBinary(), "serve",    "--store",
                                   store_url,      "--listen", "127.0.0.1:0"};
  argv.insert(argv.end(), args.begin(), args.end());
  if (!stderr_path.empty()) {
    argv.insert(argv.begin(),
                {"/bin/sh", "-c", "exec \"$0\" \"$@\" 2>" + stderr_path});
  }
  std::unique_ptr<ServeProcess> server(new ServeProcess(argv));
  if (!server->child_.started()) {
    return absl::InternalError("cannot start delayq serve");
  }
  std::optional<std::string> line = server->child_.ReadLineStartingWith(
      "listening on http://", absl::Seconds(30));
  if (!line.has_value() ||
      !absl::SimpleAtoi(line->substr(line->rfind(':') + 1), &server->port_)) {
    return absl::InternalError("delayq serve did not start listening");
  }
  return server;
}

int ServeProcess::Stop() {
  if (child_.pid() > 0) kill(child_.pid(), SIGTERM);
  return child_.Wait();
}

ApiClient::ApiClient(int port, std::string token) : client_("127.0.0.1", port) {
  client_.set_keep_alive(true);
  client_.set_tcp_nodelay(true);
  client_.set_read_timeout(120, 0);
  if (!token.empty()) {
    headers_.emplace("Authorization", absl::StrCat("Bearer ", token));
  }
}

HttpReply ApiClient::Reply(const httplib::Result& result) {
  HttpReply reply;
  if (!result) return reply;
  reply.status = result->status;
  reply.body = result->body;
  reply.allow = result->get_header_value("Allow");
  if (absl::StartsWith(result->get_header_value("Content-Type"),
                       "application/json")) {
    reply.json = Json::parse(reply.body, nullptr, /*allow_exceptions=*/false);
  }
  return reply;
}

HttpReply ApiClient::Get(const std::string& path) {
  return Reply(client_.Get(path.c_str(), headers_));
}

HttpReply ApiClient::Post(const std::string& path, const Json& body) {
  return PostRaw(path, body.dump());
}

HttpReply ApiClient::PostRaw(const std::string& path, const std::string& body) {
  return Reply(client_.Post(path.c_str(), headers_, body, "application/json"));
}

HttpReply ApiClient::Put(const std::string& path, const Json& body) {
  return Reply(
      client_.Put(path.c_str(), headers_, body.dump(), "application/json"));
}

HttpReply ApiClient::Delete(const std::string& path) {
  return Reply(client_.Delete(path.c_str(), headers_));
}

}  // namespace testing
}  // namespace delayq
