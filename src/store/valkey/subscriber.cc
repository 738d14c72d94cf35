#include "store/valkey/subscriber.h"

#include <hiredis/hiredis.h>

#include <boost/asio/write.hpp>
#include <spdlog/spdlog.h>

#include "store/valkey/cluster_map.h"
#include "store/valkey/partition_map.h"
#include "store/valkey/resp_connection.h"

namespace parley::store::valkey {

namespace asio = boost::asio;

namespace {
constexpr int64_t kBackoffMinNs = 50'000'000;
constexpr int64_t kBackoffMaxNs = 1'000'000'000;

std::string str_of(const redisReply* r) {
  if (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS || r->type == REDIS_REPLY_ERROR) {
    return std::string(r->str, r->len);
  }
  return {};
}
}  // namespace

Subscriber::Subscriber(asio::io_context& loop, HostPort addr, Handlers handlers)
    : loop_(loop), addr_(std::move(addr)), handlers_(std::move(handlers)), socket_(loop), reconnect_(loop) {}

Subscriber::~Subscriber() {
  if (reader_) redisReaderFree(reader_);
}

void Subscriber::subscribe(const std::string& channel) {
  if (state_ == State::kClosed || !wanted_.insert(channel).second) return;
  if (state_ == State::kReady) return send(format_command({"SSUBSCRIBE", channel}));
  if (state_ == State::kIdle) connect();  // sends every wanted channel once connected
}

void Subscriber::unsubscribe(const std::string& channel) {
  if (wanted_.erase(channel) == 0) return;
  if (state_ == State::kReady) send(format_command({"SUNSUBSCRIBE", channel}));
}

void Subscriber::connect() {
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

void Subscriber::on_connected(uint64_t) {
  boost::system::error_code ec;
  socket_.set_option(asio::ip::tcp::no_delay(true), ec);
  if (reader_) redisReaderFree(reader_);
  reader_ = redisReaderCreate();
  if (!reader_) return fail("out of memory");
  state_ = State::kReady;
  // One command per channel: in a cluster a multi-channel SSUBSCRIBE must stay
  // within one slot.
  for (const auto& ch : wanted_) out_ += format_command({"SSUBSCRIBE", ch});
  read_more();
  write_more();
}

void Subscriber::send(std::string cmd) {
  out_ += cmd;
  write_more();
}

void Subscriber::write_more() {
  if (state_ != State::kReady || !writing_.empty() || out_.empty()) return;
  writing_.swap(out_);
  const uint64_t gen = gen_;
  asio::async_write(socket_, asio::buffer(writing_),
                    [self = shared_from_this(), gen](const boost::system::error_code& e, size_t) {
                      if (gen != self->gen_) return;
                      if (e) return self->fail("write: " + e.message());
                      self->writing_.clear();
                      self->write_more();
                    });
}

void Subscriber::read_more() {
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

void Subscriber::on_read(size_t n) {
  if (redisReaderFeed(reader_, buf_.data(), n) != REDIS_OK) return fail("protocol error");
  const uint64_t gen = gen_;
  for (;;) {
    void* raw = nullptr;
    if (redisReaderGetReply(reader_, &raw) != REDIS_OK) return fail("protocol error");
    if (raw == nullptr) break;
    Reply r(static_cast<redisReply*>(raw));
    backoff_ns_ = 0;
    if (r->type == REDIS_REPLY_ERROR) {
      // A MOVED answer to an SSUBSCRIBE: every wanted channel of that slot
      // belongs elsewhere now.
      const std::string err = str_of(r.get());
      auto redirect = parse_redirect(err);
      if (!redirect) {
        spdlog::warn("valkey {}:{} (subscriber): {}", addr_.ip, addr_.port, err);
        continue;
      }
      std::vector<std::string> moved;
      for (const auto& ch : wanted_) {
        if (key_slot(ch) == redirect->slot) moved.push_back(ch);
      }
      for (const auto& ch : moved) {
        wanted_.erase(ch);
        if (handlers_.lost) handlers_.lost(ch);
      }
    } else if (r->type == REDIS_REPLY_ARRAY && r->elements == 3 &&
               r->element[0]->type == REDIS_REPLY_STRING && r->element[1]->type == REDIS_REPLY_STRING) {
      const std::string kind = str_of(r->element[0]);
      std::string ch = str_of(r->element[1]);
      if (kind == "smessage" && r->element[2]->type == REDIS_REPLY_STRING) {
        if (r->element[2]->len > kMaxPush) return fail("push too large");
        if (wanted_.contains(ch) && handlers_.message) handlers_.message(ch, str_of(r->element[2]));
      } else if (kind == "ssubscribe") {
        if (wanted_.contains(ch) && handlers_.subscribed) handlers_.subscribed(ch);
      } else if (kind == "sunsubscribe" && wanted_.contains(ch)) {
        // Not asked for: the node gave the slot away (Cluster resharding).
        wanted_.erase(ch);
        if (handlers_.lost) handlers_.lost(ch);
      }
    }
    if (gen != gen_ || state_ != State::kReady) return;
  }
  read_more();
}

void Subscriber::fail(const std::string& why) {
  if (state_ == State::kReady) spdlog::warn("valkey {}:{} (subscriber): {}", addr_.ip, addr_.port, why);
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
  if (state_ == State::kClosed) return;
  state_ = State::kBackoff;
  backoff_ns_ = backoff_ns_ == 0 ? kBackoffMinNs : std::min(backoff_ns_ * 2, kBackoffMaxNs);
  reconnect_.expires_after(std::chrono::nanoseconds(backoff_ns_));
  reconnect_.async_wait([self = shared_from_this(), gen = gen_](const boost::system::error_code& e) {
    if (e || gen != self->gen_ || self->state_ != State::kBackoff) return;
    if (self->wanted_.empty()) {
      self->state_ = State::kIdle;
      return;
    }
    self->connect();
  });
}

void Subscriber::close() {
  state_ = State::kClosed;
  reconnect_.cancel();
  fail("closed");
}

}  // namespace parley::store::valkey
