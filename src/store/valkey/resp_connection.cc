#include "store/valkey/resp_connection.h"

#include <hiredis/hiredis.h>

#include <algorithm>
#include <boost/asio/post.hpp>
#include <spdlog/spdlog.h>

#include "common/clock.h"

namespace parley::store::valkey {

namespace asio = boost::asio;

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
Error unavailable(const std::string& why) {
  return Error{ErrorCode::kUnavailable, "store unavailable: " + why, 1000};
}
}  // namespace

RespConnection::RespConnection(asio::io_context& loop, HostPort addr, ConnectionOptions opts)
    : opts_(std::move(opts)), sock_(loop, std::move(addr), *this), watchdog_(loop) {}

RespConnection::~RespConnection() = default;

void RespConnection::update_counts() {
  queued_.store(out_count_, std::memory_order_relaxed);
  in_flight_.store(waiting_.size() - out_count_, std::memory_order_relaxed);
}

void RespConnection::send(std::string command, ReplyDone done) {
  auto refuse = [&done](const char* why) {
    if (done) done(unavailable(why));
  };
  const auto state = sock_.state();
  if (state == RespSocket::State::kClosed) return refuse("connection closed");
  if (state == RespSocket::State::kBackoff && steady_ns() < sock_.backoff_until_ns()) {
    return refuse("node unreachable");
  }
  if (waiting_.size() >= opts_.max_waiting) return refuse("too many commands waiting");
  waiting_.push_back(Waiting{std::move(done), steady_ns()});
  ++out_count_;
  update_counts();
  arm_watchdog();
  sock_.send(command);
  sock_.connect();  // when idle, or when its backoff is over
}

void RespConnection::on_socket_ready() {
  // The hello commands go before everything queued while connecting.
  std::string hello;
  for (auto it = opts_.hello.rbegin(); it != opts_.hello.rend(); ++it) {
    waiting_.push_front(Waiting{nullptr, steady_ns()});
  }
  for (const auto& h : opts_.hello) hello += h;
  out_count_ += opts_.hello.size();
  update_counts();
  arm_watchdog();
  sock_.send(hello, true);
}

void RespConnection::on_socket_writing() {
  out_count_ = 0;
  update_counts();
}

void RespConnection::on_socket_reply(Reply reply) {
  if (waiting_.size() == out_count_) return sock_.fail("reply without a command");
  Waiting w = std::move(waiting_.front());
  waiting_.pop_front();
  down_.store(false, std::memory_order_relaxed);
  up_.store(true, std::memory_order_relaxed);
  update_counts();
  if (w.done) {
    w.done(std::move(reply));
  } else if (reply->type == REDIS_REPLY_ERROR) {
    spdlog::warn("valkey {}:{}: {}", address().ip, address().port, std::string(reply->str, reply->len));
  }
}

void RespConnection::arm_watchdog() {
  if (watchdog_armed_ || opts_.command_timeout_ms == 0) return;
  watchdog_armed_ = true;
  const auto period = std::chrono::milliseconds(std::max<uint32_t>(10, opts_.command_timeout_ms / 4));
  watchdog_.expires_after(period);
  watchdog_.async_wait([self = shared_from_this()](const boost::system::error_code& e) {
    self->watchdog_armed_ = false;
    if (e || self->sock_.state() == RespSocket::State::kClosed || self->waiting_.empty()) return;
    // Silence, not age: a deep pipeline behind big replies (a burst of history
    // reads) or a loop short of CPU keeps its oldest command waiting while the
    // node answers; a hung node sends nothing at all.
    // Bytes already in the socket are an answer this loop has not read yet (the
    // process itself was stalled): not silence either.
    const int64_t since = std::max(self->waiting_.front().since_ns, self->sock_.last_read_ns());
    if (!self->sock_.unread() && steady_ns() - since > int64_t{self->opts_.command_timeout_ms} * 1'000'000) {
      self->sock_.fail("no reply in " + std::to_string(self->opts_.command_timeout_ms) + " ms");
    }
    if (!self->waiting_.empty()) self->arm_watchdog();
  });
}

void RespConnection::on_socket_failed(const std::string& why, Was was) {
  if (was != Was::kBackoff && was != Was::kClosed) {
    spdlog::warn("valkey {}:{}: {}; {} commands fail with unavailable", address().ip, address().port, why,
                 waiting_.size());
  }
  std::deque<Waiting> failed;
  failed.swap(waiting_);
  out_count_ = 0;
  down_.store(true, std::memory_order_relaxed);
  up_.store(false, std::memory_order_relaxed);
  update_counts();
  for (auto& w : failed) {
    if (w.done) w.done(unavailable(why));
  }
  if (was != Was::kClosed && opts_.on_failure) opts_.on_failure();
}

void RespConnection::join_barrier(const std::string& barrier,
                                  std::function<void(const Result<Reply>&)> done) {
  barrier_waiters_.push_back(std::move(done));
  if (barrier_posted_) return;
  barrier_posted_ = true;
  asio::post(watchdog_.get_executor(), [self = shared_from_this(), barrier] {
    self->barrier_posted_ = false;
    auto waiters = std::make_shared<std::vector<std::function<void(const Result<Reply>&)>>>();
    waiters->swap(self->barrier_waiters_);
    self->send(barrier, [waiters](Result<Reply> r) {
      for (auto& w : *waiters) w(r);
    });
  });
}

void RespConnection::send_hello() {
  for (const auto& h : opts_.hello) send(h, nullptr);
}

void RespConnection::close() {
  watchdog_.cancel();
  sock_.close();
}

}  // namespace parley::store::valkey
