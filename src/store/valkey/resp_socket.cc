#include "store/valkey/resp_socket.h"

#include <hiredis/hiredis.h>

#include <algorithm>
#include <boost/asio/write.hpp>

#include "common/clock.h"

namespace parley::store::valkey {

namespace asio = boost::asio;

namespace {
constexpr int64_t kBackoffMinNs = 50'000'000;
constexpr int64_t kBackoffMaxNs = 1'000'000'000;
}  // namespace

void ReplyFree::operator()(redisReply* r) const {
  if (r) freeReplyObject(r);
}

RespSocket::RespSocket(asio::io_context& loop, HostPort addr, Owner& owner)
    : loop_(loop), addr_(std::move(addr)), owner_(owner), socket_(loop), reconnect_(loop) {}

RespSocket::~RespSocket() {
  if (reader_) redisReaderFree(reader_);
}

void RespSocket::connect() {
  if (state_ != State::kIdle && state_ != State::kBackoff) return;
  reconnect_.cancel();
  state_ = State::kConnecting;
  boost::system::error_code ec;
  const auto ip = asio::ip::make_address(addr_.ip, ec);
  if (ec) return fail("bad address " + addr_.ip);
  const uint64_t gen = gen_;
  socket_.async_connect(asio::ip::tcp::endpoint(ip, addr_.port),
                        [this, keep = owner_.keepalive(), gen](const boost::system::error_code& e) {
                          if (gen != gen_ || state_ != State::kConnecting) return;
                          if (e) return fail("connect: " + e.message());
                          on_connected();
                        });
}

void RespSocket::on_connected() {
  boost::system::error_code ec;
  socket_.set_option(asio::ip::tcp::no_delay(true), ec);
  if (reader_) redisReaderFree(reader_);
  reader_ = redisReaderCreate();
  if (!reader_) return fail("out of memory");
  state_ = State::kReady;
  const uint64_t gen = gen_;
  owner_.on_socket_ready();
  if (gen != gen_ || state_ != State::kReady) return;
  read_more();
  write_more();
}

void RespSocket::send(std::string_view bytes, bool first) {
  if (state_ == State::kClosed) return;
  if (first) {
    out_.insert(0, bytes);
  } else {
    out_.append(bytes);
  }
  write_more();
}

void RespSocket::write_more() {
  if (state_ != State::kReady || !writing_.empty() || out_.empty()) return;
  writing_.swap(out_);
  owner_.on_socket_writing();
  const uint64_t gen = gen_;
  asio::async_write(socket_, asio::buffer(writing_),
                    [this, keep = owner_.keepalive(), gen](const boost::system::error_code& e, size_t) {
                      if (gen != gen_) return;
                      if (e) return fail("write: " + e.message());
                      writing_.clear();
                      write_more();
                    });
}

void RespSocket::read_more() {
  const uint64_t gen = gen_;
  socket_.async_read_some(asio::buffer(buf_),
                          [this, keep = owner_.keepalive(), gen](const boost::system::error_code& e, size_t n) {
                            if (gen != gen_) return;
                            if (e) {
                              return fail(e == asio::error::eof ? std::string("closed by the node")
                                                                : "read: " + e.message());
                            }
                            on_read(n);
                          });
}

void RespSocket::on_read(size_t n) {
  last_read_ns_ = steady_ns();
  if (redisReaderFeed(reader_, buf_.data(), n) != REDIS_OK) return fail("protocol error");
  const uint64_t gen = gen_;
  for (;;) {
    void* raw = nullptr;
    if (redisReaderGetReply(reader_, &raw) != REDIS_OK) return fail("protocol error");
    if (raw == nullptr) break;
    backoff_ns_ = 0;
    owner_.on_socket_reply(Reply(static_cast<redisReply*>(raw)));
    // The owner may have failed or closed the connection.
    if (gen != gen_ || state_ != State::kReady) return;
  }
  read_more();
}

bool RespSocket::unread() const {
  boost::system::error_code ec;
  return state_ == State::kReady && socket_.available(ec) > 0 && !ec;
}

void RespSocket::fail(const std::string& why) {
  const State was = state_;
  ++gen_;
  boost::system::error_code ec;
  socket_.close(ec);
  socket_ = asio::ip::tcp::socket(loop_);
  if (reader_) {
    redisReaderFree(reader_);
    reader_ = nullptr;
  }
  out_.clear();
  writing_.clear();
  if (state_ != State::kClosed) {
    backoff_ns_ = backoff_ns_ == 0 ? kBackoffMinNs : std::min(backoff_ns_ * 2, kBackoffMaxNs);
    backoff_until_ns_ = steady_ns() + backoff_ns_;
    state_ = State::kBackoff;
    // Reconnect without waiting for traffic (the owner decides): a node refusing
    // writes turns /healthz 503, so a load balancer may send none until it is back.
    reconnect_.expires_after(std::chrono::nanoseconds(backoff_ns_));
    reconnect_.async_wait([this, keep = owner_.keepalive(), gen = gen_](const boost::system::error_code& e) {
      if (e || gen != gen_ || state_ != State::kBackoff) return;
      if (owner_.on_socket_retry()) {
        connect();
      } else {
        state_ = State::kIdle;
      }
    });
  }
  owner_.on_socket_failed(why, was);
}

void RespSocket::close() {
  // A failure seen from kClosed: the owner logs nothing and fails what waits.
  state_ = State::kClosed;
  reconnect_.cancel();
  fail("closed");
}

}  // namespace parley::store::valkey
