#include "net/tls.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>

#include "net/thread_buffer.h"

namespace parley::net {

namespace {
// Ciphertext read per recv: one full TLS record plus its overhead.
constexpr size_t kRecvBytes = 17 * 1024;
// Plaintext encrypted per write() call: bounds the records kept for a full socket.
constexpr size_t kEncryptBytes = 64 * 1024;

std::string last_ssl_error() {
  char buf[256];
  ERR_error_string_n(ERR_get_error(), buf, sizeof buf);
  ERR_clear_error();
  return buf;
}
}  // namespace

Result<std::shared_ptr<TlsContext>> TlsContext::load(const std::string& cert_file,
                                                      const std::string& key_file) {
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  if (!ctx) return Error{ErrorCode::kInternal, "cannot create a TLS context: " + last_ssl_error()};
  std::shared_ptr<TlsContext> out(new TlsContext(ctx));
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  // Idle connections give their 16 KiB record buffers back (measured in
  // docs/operations.md); partial writes let write() take what fits.
  SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS | SSL_MODE_ENABLE_PARTIAL_WRITE |
                            SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION);
  if (SSL_CTX_use_certificate_chain_file(ctx, cert_file.c_str()) != 1) {
    return Error{ErrorCode::kBadRequest, "cannot load tls_cert " + cert_file + ": " + last_ssl_error()};
  }
  if (SSL_CTX_use_PrivateKey_file(ctx, key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
    return Error{ErrorCode::kBadRequest, "cannot load tls_key " + key_file + ": " + last_ssl_error()};
  }
  if (SSL_CTX_check_private_key(ctx) != 1) {
    return Error{ErrorCode::kBadRequest, "tls_key does not match tls_cert: " + last_ssl_error()};
  }
  return out;
}

TlsContext::~TlsContext() { SSL_CTX_free(ctx_); }

TlsSession::TlsSession(const TlsContext& ctx) : ssl_(SSL_new(ctx.native())) {
  rbio_ = BIO_new(BIO_s_mem());
  wbio_ = BIO_new(BIO_s_mem());
  SSL_set_bio(ssl_, rbio_, wbio_);
  SSL_set_accept_state(ssl_);
}

TlsSession::~TlsSession() { SSL_free(ssl_); }

void TlsSession::collect() {
  const size_t pending = BIO_ctrl_pending(wbio_);
  if (pending == 0) return;
  if (out_sent_ > 0 && out_sent_ == out_.size()) {
    out_.clear();
    out_sent_ = 0;
  }
  const size_t at = out_.size();
  out_.resize(at + pending);
  const int n = BIO_read(wbio_, out_.data() + at, static_cast<int>(pending));
  out_.resize(at + static_cast<size_t>(std::max(n, 0)));
}

bool TlsSession::flush(int fd) {
  collect();
  while (out_sent_ < out_.size()) {
    const ssize_t n = ::send(fd, out_.data() + out_sent_, out_.size() - out_sent_, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    out_sent_ += static_cast<size_t>(n);
  }
  std::string().swap(out_);  // an idle connection keeps no record buffer
  out_sent_ = 0;
  return true;
}

ssize_t TlsSession::read(int fd, void* out, size_t cap) {
  char* const cipher = thread_buffer<struct CipherTag, kRecvBytes>();
  for (;;) {
    ERR_clear_error();
    const int n = SSL_read(ssl_, out, static_cast<int>(std::min<size_t>(cap, INT32_MAX)));
    if (n > 0) {
      flush(fd);  // post-handshake messages (tickets), if any
      return n;
    }
    switch (SSL_get_error(ssl_, n)) {
      case SSL_ERROR_WANT_READ:
        break;
      case SSL_ERROR_ZERO_RETURN:
        return 0;
      default:
        flush(fd);  // an alert, when OpenSSL wrote one
        errno = EPROTO;
        return -1;
    }
    // The handshake's answers go out before more is awaited from the peer.
    flush(fd);
    const ssize_t got = ::recv(fd, cipher, kRecvBytes, 0);
    if (got == 0) return 0;
    if (got < 0) return -1;  // errno from recv (EAGAIN: wait for readability)
    BIO_write(rbio_, cipher, static_cast<int>(got));
  }
}

ssize_t TlsSession::write(int fd, const iovec* iov, int count) {
  if (!flush(fd)) {
    if (errno == 0 || errno == EINTR) errno = EAGAIN;
    return -1;
  }
  size_t taken = 0;
  for (int i = 0; i < count && taken < kEncryptBytes; ++i) {
    const char* p = static_cast<const char*>(iov[i].iov_base);
    size_t left = std::min(iov[i].iov_len, kEncryptBytes - taken);
    while (left > 0) {
      ERR_clear_error();
      const int n = SSL_write(ssl_, p, static_cast<int>(std::min<size_t>(left, INT32_MAX)));
      if (n <= 0) {
        const int err = SSL_get_error(ssl_, n);
        if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
          // The handshake is not done: the session writes only after a frame
          // came in, so this is a close (hello timeout) racing a stalled
          // handshake. Waiting for writability would spin: fail instead.
          const bool sent = flush(fd);
          if (taken > 0) return static_cast<ssize_t>(taken);
          errno = sent ? ENOTCONN : EAGAIN;
          return -1;
        }
        errno = EPIPE;
        return -1;
      }
      taken += static_cast<size_t>(n);
      p += n;
      left -= static_cast<size_t>(n);
    }
  }
  if (!flush(fd) && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return -1;
  return static_cast<ssize_t>(taken);
}

void TlsSession::shutdown() {
  ERR_clear_error();
  SSL_shutdown(ssl_);
  collect();
}

void TlsSession::feed(const void* cipher, size_t len) {
  BIO_write(rbio_, cipher, static_cast<int>(len));
}

ssize_t TlsSession::decrypt(void* out, size_t cap) {
  ERR_clear_error();
  const int n = SSL_read(ssl_, out, static_cast<int>(std::min<size_t>(cap, INT32_MAX)));
  if (n > 0) return n;
  switch (SSL_get_error(ssl_, n)) {
    case SSL_ERROR_WANT_READ:
      return 0;
    case SSL_ERROR_ZERO_RETURN:
      return -1;
    default:
      return -2;
  }
}

size_t TlsSession::encrypt(const void* plain, size_t len) {
  size_t taken = 0;
  const char* p = static_cast<const char*>(plain);
  while (taken < len) {
    ERR_clear_error();
    const int n = SSL_write(ssl_, p + taken, static_cast<int>(std::min<size_t>(len - taken, INT32_MAX)));
    if (n <= 0) break;
    taken += static_cast<size_t>(n);
  }
  return taken;
}

bool TlsSession::has_output() {
  collect();
  return out_sent_ < out_.size();
}

std::string TlsSession::take_output() {
  collect();
  std::string out = out_.substr(out_sent_);
  std::string().swap(out_);
  out_sent_ = 0;
  return out;
}

}  // namespace parley::net
