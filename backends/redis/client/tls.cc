// Copyright delayq authors.

#include "backends/redis/client/tls.h"

#include <arpa/inet.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"

namespace delayq {
namespace redis_internal {
namespace {

// The last error OpenSSL queued in this thread, as text.
std::string OpenSslError() {
  const unsigned long code = ERR_peek_last_error();
  if (code == 0) return "unknown error";
  char text[256];
  ERR_error_string_n(code, text, sizeof(text));
  return text;
}

absl::Status BadFile(absl::string_view what, const std::string& path) {
  return absl::InvalidArgumentError(absl::StrCat(
      "redis tls: cannot use ", what, " '", path, "': ", OpenSslError()));
}

// A socket BIO whose writes say MSG_NOSIGNAL: OpenSSL's own writes with
// write(2), which raises SIGPIPE when the server has gone, and a library
// must not kill its process or change its signal handling.
int BioFd(BIO* bio) {
  return static_cast<int>(reinterpret_cast<intptr_t>(BIO_get_data(bio)));
}

int BioWrite(BIO* bio, const char* data, int size) {
  BIO_clear_retry_flags(bio);
  ssize_t n;
  do {
    n = send(BioFd(bio), data, static_cast<size_t>(size),
             MSG_NOSIGNAL | MSG_DONTWAIT);
  } while (n < 0 && errno == EINTR);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
    BIO_set_retry_write(bio);
  }
  return static_cast<int>(n);
}

int BioRead(BIO* bio, char* out, int size) {
  BIO_clear_retry_flags(bio);
  ssize_t n;
  do {
    n = recv(BioFd(bio), out, static_cast<size_t>(size), MSG_DONTWAIT);
  } while (n < 0 && errno == EINTR);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
    BIO_set_retry_read(bio);
  }
  return static_cast<int>(n);
}

long BioCtrl(BIO*, int cmd, long, void*) {  // NOLINT(runtime/int)
  // Nothing is buffered, so a flush is done at once; the rest is not
  // supported.
  return cmd == BIO_CTRL_FLUSH ? 1 : 0;
}

const BIO_METHOD* SocketMethod() {
  static const BIO_METHOD* method = [] {
    BIO_METHOD* m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK,
                                 "delayq socket");
    BIO_meth_set_write(m, BioWrite);
    BIO_meth_set_read(m, BioRead);
    BIO_meth_set_ctrl(m, BioCtrl);
    return m;
  }();
  return method;
}

bool IsAddress(const std::string& host) {
  unsigned char buf[sizeof(in6_addr)];
  return inet_pton(AF_INET, host.c_str(), buf) == 1 ||
         inet_pton(AF_INET6, host.c_str(), buf) == 1;
}

}  // namespace

TlsContext::TlsContext(SSL_CTX* ctx, const TlsSettings& tls)
    : ctx_(ctx), server_name_(tls.server_name), insecure_(tls.insecure) {}

TlsContext::~TlsContext() { SSL_CTX_free(ctx_); }

absl::StatusOr<std::shared_ptr<const TlsContext>> TlsContext::Create(
    const TlsSettings& tls) {
  if (tls.cert_file.empty() != tls.key_file.empty()) {
    return absl::InvalidArgumentError(
        "redis tls: a client certificate needs its key, and a key its "
        "certificate (tls_cert_file and tls_key_file)");
  }
  ERR_clear_error();
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  if (ctx == nullptr) {
    return absl::ResourceExhaustedError(
        absl::StrCat("redis tls: ", OpenSslError()));
  }
  std::shared_ptr<const TlsContext> made(new TlsContext(ctx, tls));
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  // Link writes from a buffer that may move between a write that wanted to
  // wait and its repeat, and takes partial writes.
  SSL_CTX_set_mode(
      ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  if (!tls.ca_file.empty()) {
    if (SSL_CTX_load_verify_locations(ctx, tls.ca_file.c_str(), nullptr) != 1) {
      return BadFile("tls_ca_file", tls.ca_file);
    }
  } else if (SSL_CTX_set_default_verify_paths(ctx) != 1) {
    return absl::FailedPreconditionError(absl::StrCat(
        "redis tls: cannot load the system's CA store: ", OpenSslError()));
  }
  if (!tls.cert_file.empty()) {
    if (SSL_CTX_use_certificate_chain_file(ctx, tls.cert_file.c_str()) != 1) {
      return BadFile("tls_cert_file", tls.cert_file);
    }
    if (SSL_CTX_use_PrivateKey_file(ctx, tls.key_file.c_str(),
                                    SSL_FILETYPE_PEM) != 1) {
      return BadFile("tls_key_file", tls.key_file);
    }
    if (SSL_CTX_check_private_key(ctx) != 1) {
      return BadFile("tls_key_file (it does not match tls_cert_file)",
                     tls.key_file);
    }
  }
  SSL_CTX_set_verify(ctx, tls.insecure ? SSL_VERIFY_NONE : SSL_VERIFY_PEER,
                     nullptr);
  return made;
}

absl::StatusOr<SSL*> TlsContext::NewSession(int fd,
                                            absl::string_view host) const {
  ERR_clear_error();
  SSL* ssl = SSL_new(ctx_);
  BIO* bio = BIO_new(SocketMethod());
  if (ssl == nullptr || bio == nullptr) {
    SSL_free(ssl);
    BIO_free(bio);
    return absl::ResourceExhaustedError(
        absl::StrCat("redis tls: ", OpenSslError()));
  }
  BIO_set_data(bio, reinterpret_cast<void*>(static_cast<intptr_t>(fd)));
  BIO_set_init(bio, 1);
  SSL_set_bio(ssl, bio, bio);
  const std::string name =
      server_name_.empty() ? std::string(host) : server_name_;
  bool ok = true;
  if (IsAddress(name)) {
    // SNI carries names only; the certificate must list the address.
    if (!insecure_) {
      ok =
          X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), name.c_str()) == 1;
    }
  } else {
    ok = SSL_set_tlsext_host_name(ssl, name.c_str()) == 1;
    if (ok && !insecure_) {
      SSL_set_hostflags(ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
      ok = SSL_set1_host(ssl, name.c_str()) == 1;
    }
  }
  if (!ok) {
    SSL_free(ssl);
    return absl::InvalidArgumentError(
        absl::StrCat("redis tls: cannot check the server's name '", name,
                     "': ", OpenSslError()));
  }
  return ssl;
}

absl::Status TlsContext::HandshakeError(SSL* ssl, int error,
                                        absl::string_view endpoint) const {
  const long verified = SSL_get_verify_result(ssl);  // NOLINT(runtime/int)
  if (!insecure_ && verified != X509_V_OK) {
    return absl::FailedPreconditionError(absl::StrCat(
        "redis ", endpoint, ": TLS: the server's certificate was refused: ",
        X509_verify_cert_error_string(verified),
        ". Give the CA that signs it with tls_ca_file, or the name it "
        "carries with tls_server_name"));
  }
  std::string why = "the server closed the connection";
  if (ERR_peek_last_error() != 0) {
    why = OpenSslError();
  } else if (error == SSL_ERROR_SYSCALL && errno != 0) {
    why = strerror(errno);
  }
  return absl::UnavailableError(
      absl::StrCat("redis ", endpoint, ": TLS handshake: ", why));
}

}  // namespace redis_internal
}  // namespace delayq
