// Copyright delayq authors.
//
// fault_proxy.h — a TCP proxy on loopback that breaks the connections
// through it on command, for tests of a client against a real server.
//
// Clients connect to port(); each connection gets one to the upstream
// port, and bytes are forwarded both ways until a fault says otherwise:
//   * DropAll(): every open connection is closed at once (both sides);
//     SetRefuse(true) also closes new ones as soon as they are accepted;
//   * SetDelay(d): every chunk read, either way, waits `d` before it is
//     forwarded (a slow network; the delay is real time);
//   * CutNextReply(n): the next connection that carries bytes from the
//     server forwards `n` more of them, then is closed (a reply cut
//     midway);
//   * SetBlackHole(true): connections stay open but nothing is forwarded:
//     bytes read either way are thrown away, and new connections are
//     accepted and get the same (a host that went silent).
// Clear() ends every fault. Faults take effect within about 10 ms.
//
// Thread-safe. One thread accepts; each connection has a thread of its own.
//
//   ASSERT_OK_AND_ASSIGN(auto proxy, FaultProxy::Start(server->port()));
//   options.port = proxy->port();
//   proxy->SetBlackHole(true);

#ifndef DELAYQ_TESTS_TESTING_FAULT_PROXY_H_
#define DELAYQ_TESTS_TESTING_FAULT_PROXY_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace delayq {
namespace testing {

class FaultProxy {
 public:
  // Listens on a free loopback port and forwards to 127.0.0.1:`upstream`.
  static absl::StatusOr<std::unique_ptr<FaultProxy>> Start(int upstream);

  // Closes the listener and every connection, and joins the threads.
  ~FaultProxy();
  FaultProxy(const FaultProxy&) = delete;
  FaultProxy& operator=(const FaultProxy&) = delete;

  int port() const { return port_; }

  void DropAll();
  void SetRefuse(bool refuse);
  void SetDelay(absl::Duration delay);
  void CutNextReply(int64_t bytes);
  void SetBlackHole(bool on);
  void Clear();

  // Connections accepted so far, and those cut by CutNextReply().
  int64_t accepted() const { return accepted_.load(); }
  int64_t cuts() const { return cuts_.load(); }

 private:
  FaultProxy(int listen_fd, int port, int upstream);

  void AcceptLoop();
  void Forward(int client, uint64_t generation);
  // How many of `n` bytes from the server may go on, and whether the
  // connection is to be closed after them (a cut).
  int64_t ReplyAllowance(int64_t n, bool* cut);

  const int listen_fd_;
  const int port_;
  const int upstream_;
  std::atomic<bool> stopping_{false};
  std::atomic<uint64_t> drop_generation_{0};
  std::atomic<bool> refuse_{false};
  std::atomic<bool> black_hole_{false};
  std::atomic<int64_t> delay_us_{0};
  std::atomic<int64_t> accepted_{0};
  std::atomic<int64_t> cuts_{0};

  absl::Mutex mu_;
  // Bytes left before the armed cut; -1 when none is armed.
  int64_t cut_left_ ABSL_GUARDED_BY(mu_) = -1;
  std::vector<std::thread> threads_ ABSL_GUARDED_BY(mu_);
  std::thread acceptor_;
};

}  // namespace testing
}  // namespace delayq

#endif  // DELAYQ_TESTS_TESTING_FAULT_PROXY_H_
