// Copyright delayq authors.

#include "tests/testing/tls_files.h"

#include <cstdlib>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "tests/testing/files.h"
#include "tests/testing/temp_path.h"

namespace delayq {
namespace testing {
namespace {

// The openssl commands, run by sh in `dir`; their output goes to
// openssl.log there.
constexpr char kScript[] = R"sh(
set -e
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=delayq test CA" \
  -keyout ca.key -out ca.crt
openssl req -newkey rsa:2048 -nodes -subj "/CN=localhost" \
  -keyout server.key -out server.csr
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' > server.ext
openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial \
  -days 2 -extfile server.ext -out server.crt
openssl req -newkey rsa:2048 -nodes -subj "/CN=delayq test client" \
  -keyout client.key -out client.csr
openssl x509 -req -in client.csr -CA ca.crt -CAkey ca.key -CAcreateserial \
  -days 2 -out client.crt
)sh";

}  // namespace

absl::StatusOr<TlsFiles> MakeTlsFiles() {
  TlsFiles files;
  files.dir = MakeTempDir("tls");
  if (files.dir.empty()) return absl::InternalError("cannot make a directory");
  const std::string script = files.dir + "/make.sh";
  std::ofstream(script) << kScript;
  const std::string log = files.dir + "/openssl.log";
  const std::string command = absl::StrCat("cd '", files.dir, "' && sh ",
                                           script, " > '", log, "' 2>&1");
  if (std::system(command.c_str()) != 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "cannot make test certificates with openssl (Debian package "
        "openssl):\n",
        ReadFile(log)));
  }
  files.ca_cert = files.dir + "/ca.crt";
  files.server_cert = files.dir + "/server.crt";
  files.server_key = files.dir + "/server.key";
  files.client_cert = files.dir + "/client.crt";
  files.client_key = files.dir + "/client.key";
  return files;
}

}  // namespace testing
}  // namespace delayq
