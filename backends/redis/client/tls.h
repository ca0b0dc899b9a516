// Copyright delayq authors.
//
// tls.h — TLS settings, made once into an OpenSSL context that every
// connection of a client shares.
//
// The server's certificate is verified by default: against `ca_file`, or
// the system's CA store, and against the name the client expects (the
// host it dials, or `server_name`), which it also sends with SNI. Only
// `insecure` turns the checks off.

#ifndef DELAYQ_BACKENDS_REDIS_CLIENT_TLS_H_
#define DELAYQ_BACKENDS_REDIS_CLIENT_TLS_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

typedef struct ssl_ctx_st SSL_CTX;
typedef struct ssl_st SSL;

namespace delayq {
namespace redis_internal {

// What a TLS connection checks and presents (the store fills it from its
// RedisTls).
struct TlsSettings {
  // PEM file of the CAs that may sign the server's certificate. Empty: the
  // system's CA store.
  std::string ca_file;
  // A client certificate and its private key (PEM files). Both or neither.
  std::string cert_file;
  std::string key_file;
  // The name the server's certificate must carry, also sent with SNI.
  // Empty: the host dialled.
  std::string server_name;
  // Skips every check of the server's certificate.
  bool insecure = false;
};

class TlsContext {
 public:
  // Create()
  //
  // Loads the CAs, and the client certificate and key when given.
  // InvalidArgument naming the file that cannot be read or does not hold
  // what it should (a key that does not match the certificate among them).
  static absl::StatusOr<std::shared_ptr<const TlsContext>> Create(
      const TlsSettings& tls);

  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  // A new TLS session over the connected socket `fd` to `host` (a name or
  // an IP address), set up to verify the server as the settings say. The
  // caller runs the handshake and frees it with SSL_free().
  absl::StatusOr<SSL*> NewSession(int fd, absl::string_view host) const;

  // The status for a handshake that failed (`ssl` after SSL_connect() gave
  // up, `error` its SSL_get_error()): FailedPrecondition when the server's
  // certificate was refused, saying why; Unavailable otherwise.
  absl::Status HandshakeError(SSL* ssl, int error,
                              absl::string_view endpoint) const;

 private:
  TlsContext(SSL_CTX* ctx, const TlsSettings& tls);

  SSL_CTX* const ctx_;
  const std::string server_name_;
  const bool insecure_;
};

}  // namespace redis_internal
}  // namespace delayq

#endif  // DELAYQ_BACKENDS_REDIS_CLIENT_TLS_H_
