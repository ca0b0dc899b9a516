// Copyright delayq authors.
//
// tls_files.h — a throwaway certificate authority for tests of TLS: made
// with the `openssl` command at test time, in a fresh scratch directory.
//
//   ASSERT_OK_AND_ASSIGN(testing::TlsFiles tls, testing::MakeTlsFiles());
//   // tls.ca_cert signs tls.server_cert (for localhost and 127.0.0.1) and
//   // tls.client_cert.

#ifndef DELAYQ_TESTS_TESTING_TLS_FILES_H_
#define DELAYQ_TESTS_TESTING_TLS_FILES_H_

#include <string>

#include "absl/status/statusor.h"

namespace delayq {
namespace testing {

struct TlsFiles {
  std::string dir;
  std::string ca_cert;
  std::string server_cert;  // names DNS:localhost and IP:127.0.0.1
  std::string server_key;
  std::string client_cert;
  std::string client_key;
};

// MakeTlsFiles()
//
// A CA, a server certificate and a client certificate it signs, valid for
// two days. FailedPrecondition, with openssl's output, when they cannot be
// made (no `openssl` command: Debian package openssl).
absl::StatusOr<TlsFiles> MakeTlsFiles();

}  // namespace testing
}  // namespace delayq

#endif  // DELAYQ_TESTS_TESTING_TLS_FILES_H_
