// What the WebSocket and the TCP session of the default transport share: the
// handler they report to (null once the client let go), exactly-once
// on_closed, and the handle the client holds.
//
// Thread: the default transport's io_context, which runs only inside
// Transport::poll(), i.e. on the client's poll() thread.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "parley/transport.h"
#include "url.h"

namespace parley::detail {

class Session : public std::enable_shared_from_this<Session> {
 public:
  explicit Session(ConnectionHandler& h, const ConnectOptions& o) : handler_(&h), options_(o) {}
  virtual ~Session() = default;

  virtual void start(const Url& url) = 0;
  virtual void send(std::string frame, bool binary) = 0;
  /// A clean close where the protocol has one; no handler calls after it.
  virtual void close(int code, std::string_view reason) = 0;
  /// The client is gone without close(): drop the socket now.
  void abort() {
    dead_ = true;
    shutdown();
  }

  void detach() { handler_ = nullptr; }

 protected:
  bool attached() const { return handler_ != nullptr; }
  void report_open() {
    if (handler_) handler_->on_open();
  }
  void report_frame(std::string_view bytes) {
    if (handler_) handler_->on_frame(bytes);
  }
  /// Closes the socket (and cancels what is pending on it); idempotent.
  virtual void shutdown() = 0;
  /// The connection ended: the socket goes, the client hears it once.
  void fail(int code, std::string_view reason) {
    if (dead_) return;
    dead_ = true;
    shutdown();
    report_closed(code, reason);
  }
  void report_closed(int code, std::string_view reason) {
    ConnectionHandler* h = handler_;
    handler_ = nullptr;
    if (h) h->on_closed(code, reason);
  }

  ConnectionHandler* handler_;
  ConnectOptions options_;
  bool dead_ = false;  // nothing more is read, written or reported
};

/// The Connection the client holds. Destroying it without close() aborts.
class SessionHandle final : public Connection {
 public:
  explicit SessionHandle(std::shared_ptr<Session> s) : s_(std::move(s)) {}
  ~SessionHandle() override {
    s_->detach();
    if (!closed_) s_->abort();
  }
  void send(std::string frame, bool binary) override {
    if (!closed_) s_->send(std::move(frame), binary);
  }
  void close(int code, std::string_view reason) override {
    if (closed_) return;
    closed_ = true;
    s_->detach();
    s_->close(code, reason);
  }

 private:
  std::shared_ptr<Session> s_;
  bool closed_ = false;
};

}  // namespace parley::detail
