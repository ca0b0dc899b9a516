// Copyright delayq authors.
//
// Where the server listens: "HOST:PORT" ("[::1]:7070" for IPv6), and
// whether that is loopback only.

#ifndef DELAYQ_TOOLS_SERVE_HTTP_LISTEN_ADDRESS_H_
#define DELAYQ_TOOLS_SERVE_HTTP_LISTEN_ADDRESS_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace delayq {
namespace serve {

struct ListenAddress {
  std::string host;  // without brackets
  int port = 0;      // 0: any free port
};

// InvalidArgument for anything but HOST:PORT with a port in [0, 65535].
absl::StatusOr<ListenAddress> ParseListenAddress(absl::string_view text);

// True for "localhost", 127.0.0.0/8 and ::1: addresses only this machine
// reaches. Anything else (0.0.0.0, a name, a public address) is not.
bool IsLoopback(absl::string_view host);

}  // namespace serve
}  // namespace delayq

#endif  // DELAYQ_TOOLS_SERVE_HTTP_LISTEN_ADDRESS_H_
