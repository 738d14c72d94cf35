#include "store/valkey/resp_connection.h"

#include <hiredis/hiredis.h>

#include <algorithm>
#include <boost/asio/connect.hpp>
#include <boost/asio/write.hpp>
#include <spdlog/spdlog.h>

#include "common/clock.h"

namespace parley::store::valkey {

namespace asio = boost::asio;

void ReplyFree::operator()(redisReply* r) const {
  if (r) freeReplyObject(r);
}

std::string format_command(const std::vector<std::string>& args) {
  std::vector<const char*> argv;
  std::vector<size_t> lens;
  argv.reserve(args.size());
  lens.reserve(args.size());
  for (const auto& a : args) {
    argv.push_back(a.data());
    lens.push_back(a.size());
  }
  char* out = nullptr;
  const int n = redisFormatCommandArgv(&out, static_cast<int>(args.size()), argv.data(), lens.data());
  std::string s;
  if (n > 0 && out) s.assign(out, static_cast<size_t>(n));
  if (out) redisFreeCommand(out);
  return s;
}

namespace {
constexpr int64_t kBackoffMinNs = 50'000'000;
constexpr int64_t kBackoffMaxNs = 1'000'000'000;

Error unavailable(const std::string& why) {
  return Error{ErrorCode::kUnavailable, "store unavailable: " + why, 1000};
}
}  // namespace

RespConnection::RespConnection(asio::io_context& loop, HostPort addr, ConnectionOptions opts)
    : loop_(loop), addr_(std::move(addr)), opts_(std::move(opts)), socket_(loop), watchdog_(loop), reconnect_(loop) {}

RespConnection::~RespConnection() {
  if (reader_) redisReaderFree(reader_);
}

void RespConnection::update_counts() {
  queued_.store(out_count_, std::memory_order_relaxed);
  in_flight_.store(waiting_.size() - out_count_, std::memory_order_relaxed);
}

void RespConnection::send(std::string command, ReplyDone done) {
  auto refuse = [&done](const char* why) {
    if (done) done(unavailable(why));
  };
  if (state_ == State::kClosed) return refuse("connection closed");
  if (state_ == State::kBackoff) {
    if (steady_ns() < backoff_until_ns_) return refuse("node unreachable");
    state_ = State::kIdle;
  }
  if (waiting_.size() >= opts_.max_waiting) return refuse("too many commands waiting");
  waiting_.push_back(Waiting{std::move(done), steady_ns(), false});
  out_.append(command);
  ++out_count_;
  update_counts();
  arm_watchdog();
  if (state_ == State::kIdle) return connect();
  if (state_ == State::kReady) write_more();
}

void RespConnection::connect() {
  state_ = State::kConnecting;
  boost::system::error_code ec;
  const auto ip = asio::ip::make_address(addr_.ip, ec);
  if (ec) return fail("bad address " + addr_.ip);
  const uint64_t gen = gen_;
  socket_.async_connect(asio::ip::tcp::endpoint(ip, addr_.port),
                        [self = shared_from_this(), gen](const boost::system::error_code& e) {
                          if (gen != self->gen_ || self->state_ != State::kConnecting) return;
                          if (e) return self->fail("connect: " + e.message());
                          self->on_connected(gen);
                        });
}

void RespConnection::on_connected(uint64_t gen) {
  boost::system::error_code ec;
  socket_.set_option(asio::ip::tcp::no_delay(true), ec);
  if (reader_) redisReaderFree(reader_);
  reader_ = redisReaderCreate();
  if (!reader_) return fail("out of memory");
  // The hello commands go before everything queued while connecting.
  std::string hello;
  for (auto it = opts_.hello.rbegin(); it != opts_.hello.rend(); ++it) {
    waiting_.push_front(Waiting{nullptr, steady_ns(), false});
  }
  for (const auto& h : opts_.hello) hello += h;
  out_.insert(0, hello);
  out_count_ += opts_.hello.size();
  state_ = State::kReady;
  update_counts();
  arm_watchdog();
  read_more();
  write_more();
}

void RespConnection::write_more() {
  if (state_ != State::kReady || !writing_.empty() || out_.empty()) return;
  writing_.swap(out_);
  writing_count_ = out_count_;
  out_count_ = 0;
  update_counts();
  const uint64_t gen = gen_;
  asio::async_write(socket_, asio::buffer(writing_),
                    [self = shared_from_this(), gen](const boost::system::error_code& e, size_t) {
                      if (gen != self->gen_) return;
                      if (e) return self->fail("write: " + e.message());
                      self->writing_.clear();
                      self->writing_count_ = 0;
                      self->write_more();
                    });
}

void RespConnection::read_more() {
  const uint64_t gen = gen_;
  socket_.async_read_some(asio::buffer(buf_),
                          [self = shared_from_this(), gen](const boost::system::error_code& e, size_t n) {
                            if (gen != self->gen_) return;
                            if (e) {
                              return self->fail(e == asio::error::eof ? std::string("closed by the node")
                                                                      : "read: " + e.message());
                            }
                            self->on_read(n);
                          });
}

void RespConnection::on_read(size_t n) {
  last_read_ns_ = steady_ns();
  if (redisReaderFeed(reader_, buf_.data(), n) != REDIS_OK) return fail("protocol error");
  const uint64_t gen = gen_;
  for (;;) {
    void* r = nullptr;
    if (redisReaderGetReply(reader_, &r) != REDIS_OK) return fail("protocol error");
    if (r == nullptr) break;
    Reply reply(static_cast<redisReply*>(r));
    if (waiting_.size() == out_count_) return fail("reply without a command");
    Waiting w = std::move(waiting_.front());
    waiting_.pop_front();
    down_.store(false, std::memory_order_relaxed);
    backoff_ns_ = 0;
    update_counts();
    if (w.done) {
      w.done(std::move(reply));
    } else if (reply->type == REDIS_REPLY_ERROR) {
      spdlog::warn("valkey {}:{}: {}", addr_.ip, addr_.port, std::string(reply->str, reply->len));
    }
    // A callback may have closed or failed this connection.
    if (gen != gen_ || state_ != State::kReady) return;
  }
  read_more();
}

void RespConnection::arm_watchdog() {
  if (watchdog_armed_ || opts_.command_timeout_ms == 0) return;
  watchdog_armed_ = true;
  const auto period = std::chrono::milliseconds(std::max<uint32_t>(10, opts_.command_timeout_ms / 4));
  watchdog_.expires_after(period);
  watchdog_.async_wait([self = shared_from_this()](const boost::system::error_code& e) {
    self->watchdog_armed_ = false;
    if (e || self->state_ == State::kClosed || self->waiting_.empty()) return;
    // Silence, not age: a deep pipeline behind big replies (a burst of history
    // reads) or a loop short of CPU keeps its oldest command waiting while the
    // node answers; a hung node sends nothing at all.
    // Bytes already in the socket are an answer this loop has not read yet (the
    // process itself was stalled): not silence either.
    const int64_t since = std::max(self->waiting_.front().since_ns, self->last_read_ns_);
    boost::system::error_code ec;
    const bool unread = self->socket_.available(ec) > 0 && !ec;
    if (!unread && steady_ns() - since > int64_t{self->opts_.command_timeout_ms} * 1'000'000) {
      self->fail("no reply in " + std::to_string(self->opts_.command_timeout_ms) + " ms");
    }
    if (!self->waiting_.empty()) self->arm_watchdog();
  });
}

void RespConnection::fail(const std::string& why) {
  if (state_ != State::kBackoff && state_ != State::kClosed) {
    spdlog::warn("valkey {}:{}: {}; {} commands fail with unavailable", addr_.ip, addr_.port, why,
                 waiting_.size());
  }
  ++gen_;
  boost::system::error_code ec;
  socket_.close(ec);
  socket_ = asio::ip::tcp::socket(loop_);
  if (reader_) {
    redisReaderFree(reader_);
    reader_ = nullptr;
  }
  std::deque<Waiting> failed;
  failed.swap(waiting_);
  out_.clear();
  writing_.clear();
  out_count_ = writing_count_ = 0;
  if (state_ != State::kClosed) {
    backoff_ns_ = backoff_ns_ == 0 ? kBackoffMinNs : std::min(backoff_ns_ * 2, kBackoffMaxNs);
    backoff_until_ns_ = steady_ns() + backoff_ns_;
    state_ = State::kBackoff;
    // Reconnect without waiting for traffic: a node refusing writes turns
    // /healthz 503, so a load balancer may send none until it is back.
    reconnect_.expires_after(std::chrono::nanoseconds(backoff_ns_));
    reconnect_.async_wait([self = shared_from_this(), gen = gen_](const boost::system::error_code& e) {
      if (e || gen != self->gen_ || self->state_ != State::kBackoff) return;
      self->state_ = State::kIdle;
      self->connect();
    });
  }
  down_.store(true, std::memory_order_relaxed);
  update_counts();
  for (auto& w : failed) {
    if (w.done) w.done(unavailable(why));
  }
}

void RespConnection::send_hello() {
  for (const auto& h : opts_.hello) send(h, nullptr);
}

void RespConnection::close() {
  state_ = State::kClosed;
  watchdog_.cancel();
  reconnect_.cancel();
  fail("closed");
}

}  // namespace parley::store::valkey
