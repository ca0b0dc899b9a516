// Copyright delayq authors.
//
// BeanstalkClient — the few commands of beanstalkd's text protocol that the
// reference workload uses (use, watch, put, reserve-with-timeout, delete),
// over one blocking TCP connection. A reference for the benchmarks only: no
// reconnection, no pipelining, one caller at a time.
//
//   absl::StatusOr<std::unique_ptr<BeanstalkClient>> c =
//       BeanstalkClient::Connect("127.0.0.1", 11300);
//   (*c)->Use("w1");
//   (*c)->Put("payload", /*ttr_s=*/60);

#ifndef DELAYQ_BENCH_BASELINES_BEANSTALK_CLIENT_H_
#define DELAYQ_BENCH_BASELINES_BEANSTALK_CLIENT_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace delayq {
namespace bench {

class BeanstalkClient {
 public:
  // A job handed out by Reserve().
  struct Reserved {
    uint64_t id = 0;
    std::string body;
  };

  static absl::StatusOr<std::unique_ptr<BeanstalkClient>> Connect(
      const std::string& host, int port);
  ~BeanstalkClient();
  BeanstalkClient(const BeanstalkClient&) = delete;
  BeanstalkClient& operator=(const BeanstalkClient&) = delete;

  // The tube that Put() writes to.
  absl::Status Use(absl::string_view tube);
  // Reserve() takes from `tube` only (the default tube is ignored).
  absl::Status WatchOnly(absl::string_view tube);
  // Stores a ready job (priority 0, no delay); returns its id.
  absl::StatusOr<uint64_t> Put(absl::string_view body, int ttr_s);
  // The next ready job, or nullopt when none came within `timeout_s`.
  absl::StatusOr<std::optional<Reserved>> Reserve(int timeout_s);
  // Deletes a reserved job: the acknowledgement.
  absl::Status Delete(uint64_t id);

 private:
  explicit BeanstalkClient(int fd) : fd_(fd) {}
  absl::Status Send(absl::string_view bytes);
  // The next reply line, without its "\r\n".
  absl::StatusOr<std::string> ReadLine();
  // `n` bytes of body and the "\r\n" after them.
  absl::StatusOr<std::string> ReadBody(size_t n);
  // Sends `command` and fails unless the reply line starts with `want`;
  // returns the line.
  absl::StatusOr<std::string> Expect(absl::string_view command,
                                     absl::string_view want);
  absl::Status Fill();

  int fd_;
  std::string in_;  // read, not yet consumed
};

}  // namespace bench
}  // namespace delayq

#endif  // DELAYQ_BENCH_BASELINES_BEANSTALK_CLIENT_H_
