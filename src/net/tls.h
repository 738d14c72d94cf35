// TLS for client connections, over memory BIOs (OpenSSL).
//
// Why not asio::ssl::stream: a Connection writes its queue with one gathered
// non-blocking sendmsg and reads with readiness waits (connection.h); an
// ssl::stream would replace both with chains of composed operations and its
// own buffers. A TlsSession instead sits between the socket and those calls:
// read() receives ciphertext and returns plaintext, write() encrypts from the
// same iovecs the plain path sends and sends the records, keeping what the
// socket does not take until the next call. No async operation of its own.
//
// Owned by one connection, on its loop. TlsContext is shared read-only.
#pragma once

#include <sys/types.h>
#include <sys/uio.h>

#include <memory>
#include <string>

#include "common/status.h"

struct ssl_ctx_st;
struct ssl_st;
struct bio_st;

namespace parley::net {

// A server certificate chain and key (PEM files), loaded once.
class TlsContext {
 public:
  static Result<std::shared_ptr<TlsContext>> load(const std::string& cert_file,
                                                   const std::string& key_file);
  ~TlsContext();
  ssl_ctx_st* native() const { return ctx_; }

 private:
  explicit TlsContext(ssl_ctx_st* ctx) : ctx_(ctx) {}
  ssl_ctx_st* ctx_;
};

class TlsSession {
 public:
  explicit TlsSession(const TlsContext& ctx);
  ~TlsSession();
  TlsSession(const TlsSession&) = delete;
  TlsSession& operator=(const TlsSession&) = delete;

  // Plaintext from the peer: > 0 bytes, 0 at the end of the stream (TCP EOF
  // or the peer's close_notify), or -1 with errno: EAGAIN (nothing decrypted
  // yet; wait for readability), EPROTO (not TLS, or a TLS error: drop the
  // connection), or the socket's error. Drives the handshake as needed.
  ssize_t read(int fd, void* out, size_t cap);
  // Encrypts plaintext from iov and sends the records: the plaintext bytes
  // taken (> 0), or -1 with errno EAGAIN when earlier records still wait for
  // the socket (nothing taken), or the socket's error.
  ssize_t write(int fd, const iovec* iov, int count);
  // Sends records still waiting; true when none is left.
  bool flush(int fd);
  // Queues a close_notify (sent by the next flush).
  void shutdown();

  // The same without a socket, for a caller that moves ciphertext itself
  // (TlsStream under Beast's HTTP reader): feed() hands over ciphertext from
  // the peer; decrypt() returns plaintext (> 0), 0 when it needs more
  // ciphertext, -1 at the end of the stream, -2 on a TLS error; encrypt()
  // takes plaintext (0 while the handshake is not done); take_output() is the
  // ciphertext to send, moved out.
  void feed(const void* cipher, size_t len);
  ssize_t decrypt(void* out, size_t cap);
  size_t encrypt(const void* plain, size_t len);
  std::string take_output();
  bool has_output();

 private:
  // Moves what OpenSSL wrote into the write BIO to out_.
  void collect();

  ssl_st* ssl_;
  bio_st* rbio_;  // ciphertext from the peer, owned by ssl_
  bio_st* wbio_;  // ciphertext to the peer, owned by ssl_
  std::string out_;    // records not yet taken by the socket
  size_t out_sent_ = 0;
};

}  // namespace parley::net
