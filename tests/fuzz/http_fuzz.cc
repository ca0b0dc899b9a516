// Copyright delayq authors.
//
// The HTTP request reader of `delayq serve` (HttpConnection over a
// socketpair): the input's bytes are sent by a writer thread, which then
// shuts its side down, and the requests are read until the connection ends,
// as a connection thread reads them.
//
// Properties:
//   - the same bytes give the same sequence of outcomes (requests with the
//     same method, path, query, authorization and body; or the same
//     refusal status; or the end of the connection), whether they arrive
//     as fast as they are written or in pieces cut where the input says
//     (each piece is read before the next is sent);
//   - a request's body is never over the body limit;
//   - a refusal is a 4xx status, and it does not keep the connection.
// The limits are small (a 256-byte body, 2 s to read a request) so that no
// input takes long; a delivery that took over a second anyway (a loaded
// machine) is not compared, since a deadline may have cut it short.

#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "fuzzer/FuzzedDataProvider.h"
#include "tests/fuzz/fuzz_check.h"
#include "tools/serve/http/http_wire.h"

namespace delayq {
namespace {

using serve::HttpConnection;

constexpr size_t kMaxBody = 256;
// Requests read from one input at most (a pipelined input may hold many).
constexpr int kMaxRequests = 64;

// One outcome, as text, so that sequences compare and print.
std::string Describe(const HttpConnection::Outcome& o,
                     const serve::HttpRequest& r) {
  switch (o.kind) {
    case HttpConnection::Outcome::kRequest: {
      std::vector<std::string> query;
      for (const auto& [k, v] : r.query) {
        query.push_back(absl::StrCat(fuzz::Escaped(k), "=", fuzz::Escaped(v)));
      }
      return absl::StrCat(
          "request ", fuzz::Escaped(r.method), " ", fuzz::Escaped(r.path), " ?",
          absl::StrJoin(query, "&"), " auth=", fuzz::Escaped(r.authorization),
          " keep_alive=", o.keep_alive, " head=", o.head, " 1.0=", o.http_1_0,
          " body=", fuzz::Escaped(r.body));
    }
    case HttpConnection::Outcome::kRefused:
      return absl::StrCat("refused ", o.status);
    case HttpConnection::Outcome::kBroken:
      return "broken";
  }
  return "?";
}

// Sends `bytes` in `pieces` (sizes; empty: all at once), waiting after each
// until the reader has taken it, then shuts the writing side down. Stops
// early when `stop` is set (the reader has finished).
void Write(int fd, int reader_fd, const std::string& bytes,
           const std::vector<size_t>& pieces, const std::atomic<bool>& stop) {
  size_t at = 0;
  auto send_all = [&](size_t n) {
    while (n > 0 && !stop.load()) {
      const ssize_t sent = send(fd, bytes.data() + at, n, MSG_NOSIGNAL);
      if (sent <= 0) return false;
      at += sent;
      n -= sent;
    }
    return n == 0;
  };
  for (size_t piece : pieces) {
    if (!send_all(std::min(piece, bytes.size() - at))) break;
    // Wait until the reader has taken the piece: the next one arrives on
    // its own.
    const absl::Time give_up = absl::Now() + absl::Seconds(2);
    int queued = 1;
    while (!stop.load() && absl::Now() < give_up &&
           ioctl(reader_fd, FIONREAD, &queued) == 0 && queued > 0) {
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }
  send_all(bytes.size() - at);
  shutdown(fd, SHUT_WR);
}

struct Delivery {
  std::vector<std::string> outcomes;
  absl::Duration took;
};

Delivery Deliver(const std::string& bytes, const std::vector<size_t>& pieces) {
  int fds[2];
  FUZZ_CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0, "socketpair");
  HttpConnection::Limits limits;
  limits.max_body_bytes = kMaxBody;
  limits.idle = absl::Seconds(2);
  limits.request = absl::Seconds(2);
  limits.reply = absl::Seconds(1);
  Delivery d;
  const absl::Time start = absl::Now();
  std::atomic<bool> stop{false};
  {
    HttpConnection connection(fds[0], limits);
    std::thread writer(Write, fds[1], fds[0], std::cref(bytes),
                       std::cref(pieces), std::cref(stop));
    for (int i = 0; i < kMaxRequests; ++i) {
      if (!connection.AwaitRequest()) {
        d.outcomes.push_back("end");
        break;
      }
      serve::HttpRequest request;
      const HttpConnection::Outcome o = connection.Read(&request);
      d.outcomes.push_back(Describe(o, request));
      if (o.kind == HttpConnection::Outcome::kRequest) {
        FUZZ_CHECK(request.body.size() <= kMaxBody, "a body of ",
                   request.body.size(), " bytes was read: ", d.outcomes.back());
      }
      if (o.kind == HttpConnection::Outcome::kRefused) {
        FUZZ_CHECK(o.status >= 400 && o.status < 500 && !o.keep_alive,
                   "refused with ", o.status, ", keep_alive ", o.keep_alive);
      }
      if (o.kind != HttpConnection::Outcome::kRequest) break;
    }
    // Unblocks a writer stuck on a full socket, then waits for it; the
    // connection closes its socket after that.
    stop.store(true);
    shutdown(fds[0], SHUT_RDWR);
    writer.join();
  }
  close(fds[1]);
  d.took = absl::Now() - start;
  return d;
}

}  // namespace
}  // namespace delayq

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace delayq;  // NOLINT: the entry point is outside the namespace
  FuzzedDataProvider in(data, size);
  // The cuts come from the input's end, so a seed is a request with a few
  // bytes after it (tests/fuzz/corpus/http/README.md).
  const int cuts = in.ConsumeIntegralInRange(0, 8);
  std::vector<size_t> at;
  for (int i = 0; i < cuts; ++i) at.push_back(in.ConsumeIntegral<uint16_t>());
  const std::string bytes = in.ConsumeRemainingBytesAsString();
  std::vector<size_t> pieces;
  for (size_t& a : at) a %= bytes.size() + 1;
  std::sort(at.begin(), at.end());
  size_t last = 0;
  for (size_t a : at) {
    pieces.push_back(a - last);
    last = a;
  }

  const Delivery whole = Deliver(bytes, {});
  const Delivery cut = Deliver(bytes, pieces);
  if (whole.took > absl::Seconds(1) || cut.took > absl::Seconds(1)) {
    std::fprintf(stderr, "http_fuzz: a delivery took %s, not compared\n",
                 absl::FormatDuration(std::max(whole.took, cut.took)).c_str());
    return 0;
  }
  FUZZ_CHECK(whole.outcomes == cut.outcomes, "input \"", fuzz::Escaped(bytes),
             "\"\nall at once:\n  ", absl::StrJoin(whole.outcomes, "\n  "),
             "\nin pieces of ", absl::StrJoin(pieces, ", "), ":\n  ",
             absl::StrJoin(cut.outcomes, "\n  "));
  return 0;
}
