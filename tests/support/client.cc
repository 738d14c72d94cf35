#include "support/client.h"

#include <gtest/gtest.h>
#include <simdjson.h>

#include <future>
#include <regex>

#include <boost/asio/connect.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/websocket.hpp>

#include "support/server_process.h"

namespace parley::testing {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace websocket = beast::websocket;
using tcp = asio::ip::tcp;

namespace {
bool field(const std::string& obj, const char* key, simdjson::dom::element& out) {
  thread_local simdjson::dom::parser parser;
  thread_local std::string copy;
  copy = obj;
  simdjson::dom::element doc;
  if (parser.parse(copy).get(doc)) return false;
  return !doc[key].get(out);
}
}  // namespace

std::optional<std::string> json_str(const std::string& obj, const char* key) {
  simdjson::dom::element e;
  std::string_view v;
  if (!field(obj, key, e) || e.get_string().get(v)) return std::nullopt;
  return std::string(v);
}

std::optional<int64_t> json_int(const std::string& obj, const char* key) {
  simdjson::dom::element e;
  int64_t v;
  if (!field(obj, key, e) || e.get_int64().get(v)) return std::nullopt;
  return v;
}

std::optional<bool> json_bool(const std::string& obj, const char* key) {
  simdjson::dom::element e;
  bool v;
  if (!field(obj, key, e) || e.get_bool().get(v)) return std::nullopt;
  return v;
}

std::optional<std::string> json_raw(const std::string& obj, const char* key) {
  simdjson::dom::element e;
  if (!field(obj, key, e)) return std::nullopt;
  return simdjson::minify(e);
}

std::string op_of(const std::string& obj) { return json_str(obj, "op").value_or(""); }

std::string without_server_time(const std::optional<std::string>& obj) {
  if (!obj) return "";
  static const std::regex ts(R"re(,"ts":[0-9]+)re");
  static const std::regex tick(R"re("tick":[0-9]+,)re");
  return std::regex_replace(std::regex_replace(*obj, ts, ""), tick, "");
}

std::vector<std::string> json_array_items(const std::string& json) {
  simdjson::dom::parser parser;
  simdjson::dom::array arr;
  std::vector<std::string> out;
  if (parser.parse(json).get(arr)) return out;
  for (auto e : arr) out.push_back(simdjson::minify(e));
  return out;
}

std::vector<std::string> json_frame_objects(const std::string& frame) {
  thread_local simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (parser.parse(frame).get(doc)) return {"!invalid-json:" + frame};
  std::vector<std::string> out;
  if (doc.is_array()) {
    for (auto e : doc.get_array()) out.push_back(simdjson::minify(e));
  } else {
    out.push_back(simdjson::minify(doc));
  }
  return out;
}

std::vector<int64_t> msg_seqs(const std::string& obj) {
  std::vector<int64_t> out;
  for (const auto& m : json_array_items(json_raw(obj, "msgs").value_or(""))) {
    if (auto seq = json_int(m, "seq")) out.push_back(*seq);
  }
  return out;
}

std::vector<int64_t> seq_range(int64_t first, int64_t last) {
  std::vector<int64_t> out;
  for (int64_t s = first; s <= last; ++s) out.push_back(s);
  return out;
}

std::string hello_frame(const std::string& token, int rid, int v) {
  return R"({"op":"hello","v":)" + std::to_string(v) + R"(,"token":")" + token + R"(","rid":)" +
         std::to_string(rid) + "}";
}

std::string join_frame(const std::string& ch, std::optional<uint64_t> since,
                       std::optional<int64_t> rid) {
  std::string f = R"({"op":"join","ch":")" + ch + "\"";
  if (since) f += ",\"since\":" + std::to_string(*since);
  if (rid) f += ",\"rid\":" + std::to_string(*rid);
  return f + "}";
}

std::string pub_frame(const std::string& ch, const std::string& id, const std::string& body,
                      std::optional<int64_t> rid) {
  std::string f = R"({"op":"pub","ch":")" + ch + R"(","id":")" + id + R"(","body":)" + body;
  if (rid) f += ",\"rid\":" + std::to_string(*rid);
  return f + "}";
}

// Every operation on the stream runs on the client's one io thread: a Beast
// websocket stream is not thread-safe, and a read that meets a close or ping
// writes its reply itself, so a write from the test's thread beside the reader's
// read is a data race (it once corrupted the heap in preauth_test). The test's
// thread posts its writes and waits for them; they leave one at a time, in order.
struct Client::Impl {
  asio::io_context io;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work{io.get_executor()};
  Wire wire = Wire::kWebSocket;
  std::optional<websocket::stream<tcp::socket>> ws;
  std::optional<tcp::socket> tcp_sock;
  std::optional<asio::local::stream_protocol::socket> unix_sock;

  struct Write {
    std::string bytes;
    bool raw = false;  // past the WebSocket framing (hand-made frames)
    std::promise<void> done;
  };
  std::deque<std::shared_ptr<Write>> writes;  // io thread only; front() is in flight
  beast::flat_buffer ws_buf;
  char prefix[4];
  std::string body;

  template <typename Fn>
  void with_stream(Fn fn) {
    if (tcp_sock) fn(*tcp_sock);
    else fn(*unix_sock);
  }

  // Runs fn on the io thread and waits for it.
  template <typename Fn>
  void on_io(Fn fn) {
    std::promise<void> ran;
    asio::post(io, [&] { fn(); ran.set_value(); });
    ran.get_future().wait();
  }
};

Client::Client(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

std::unique_ptr<Client> Client::connect(uint16_t port, Wire wire, const std::string& origin,
                                        const std::string& unix_path) {
  auto impl = std::make_unique<Impl>();
  impl->wire = wire;
  const tcp::endpoint ep(asio::ip::make_address("127.0.0.1"), port);
  if (wire == Wire::kWebSocket) {
    impl->ws.emplace(impl->io);
    impl->ws->next_layer().connect(ep);
    impl->ws->set_option(websocket::stream_base::decorator([origin](websocket::request_type& r) {
      if (!origin.empty()) r.set(beast::http::field::origin, origin);
    }));
    impl->ws->read_message_max(64 << 20);
    impl->ws->handshake("127.0.0.1", "/v1/ws");
  } else if (wire == Wire::kTcp) {
    impl->tcp_sock.emplace(impl->io);
    impl->tcp_sock->connect(ep);
  } else {
    impl->unix_sock.emplace(impl->io);
    impl->unix_sock->connect(asio::local::stream_protocol::endpoint(unix_path));
  }
  auto c = std::unique_ptr<Client>(new Client(std::move(impl)));
  Client* self = c.get();
  asio::post(self->impl_->io, [self] { self->read_next(); });
  c->reader_ = std::thread([self] { self->impl_->io.run(); });
  return c;
}

void Client::read_next() {
  auto& im = *impl_;
  auto fail = [this](int code) {
    std::lock_guard lk(mu_);
    closed_ = true;
    close_code_ = code;
    cv_.notify_all();
  };
  if (im.ws) {
    im.ws->async_read(im.ws_buf, [this, fail](beast::error_code ec, size_t) {
      auto& im = *impl_;
      if (ec) return fail(im.ws->reason().code);
      const std::string frame = beast::buffers_to_string(im.ws_buf.data());
      im.ws_buf.consume(im.ws_buf.size());
      push_frame(frame);
      read_next();
    });
    return;
  }
  im.with_stream([&](auto& s) {
    asio::async_read(s, asio::buffer(im.prefix, 4), [this, fail, &s](beast::error_code ec, size_t) {
      auto& im = *impl_;
      if (ec) return fail(0);
      const auto* p = reinterpret_cast<const uint8_t*>(im.prefix);
      const uint32_t len = (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) | p[3];
      im.body.resize(len);
      asio::async_read(s, asio::buffer(im.body), [this, fail](beast::error_code ec, size_t) {
        if (ec) return fail(0);
        push_frame(impl_->body);
        read_next();
      });
    });
  });
}

void Client::write_next() {
  auto& im = *impl_;
  if (im.writes.empty()) return;
  auto w = im.writes.front();
  auto done = [this, w](beast::error_code, size_t) {
    w->done.set_value();
    impl_->writes.pop_front();
    write_next();
  };
  if (im.ws && !w->raw) {
    im.ws->text(true);
    im.ws->async_write(asio::buffer(w->bytes), done);
  } else if (im.ws) {
    asio::async_write(im.ws->next_layer(), asio::buffer(w->bytes), done);
  } else {
    im.with_stream([&](auto& s) { asio::async_write(s, asio::buffer(w->bytes), done); });
  }
}

void Client::write(std::string bytes, bool raw) {
  auto w = std::make_shared<Impl::Write>();
  w->bytes = std::move(bytes);
  w->raw = raw;
  auto left = w->done.get_future();
  asio::post(impl_->io, [this, w] {
    impl_->writes.push_back(w);
    if (impl_->writes.size() == 1) write_next();
  });
  left.wait();
}

Client::~Client() {
  close();
  impl_->work.reset();
  impl_->io.stop();
  if (reader_.joinable()) reader_.join();
}

void Client::close() {
  impl_->on_io([this] {
    beast::error_code ec;
    if (impl_->ws) {
      impl_->ws->next_layer().shutdown(tcp::socket::shutdown_both, ec);
    } else {
      impl_->with_stream([&](auto& s) { s.shutdown(asio::socket_base::shutdown_both, ec); });
    }
  });
}

void Client::push_frame(const std::string& frame) {
  frames_.fetch_add(1);
  auto objects = json_frame_objects(frame);
  std::lock_guard lk(mu_);
  for (auto& o : objects) objects_.push_back(std::move(o));
  cv_.notify_all();
}

void Client::send(const std::string& json) {
  if (impl_->ws) return write(json, false);
  std::string out(4, '\0');
  const uint32_t n = static_cast<uint32_t>(json.size());
  out[0] = char(n >> 24); out[1] = char(n >> 16); out[2] = char(n >> 8); out[3] = char(n);
  out += json;
  write(std::move(out), true);
}

void Client::send_raw(const std::string& bytes) { write(bytes, true); }

std::optional<std::string> Client::next(std::chrono::milliseconds timeout) {
  std::unique_lock lk(mu_);
  if (!cv_.wait_for(lk, timeout, [&] { return !objects_.empty() || closed_; })) return std::nullopt;
  if (objects_.empty()) return std::nullopt;
  auto o = std::move(objects_.front());
  objects_.pop_front();
  return o;
}

std::string Client::expect(const std::string& op, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return "";
    auto o = next(left);
    if (!o) return "";
    if (op_of(*o) == op) return *o;
  }
}

std::string Client::hello(const std::string& token, int rid) {
  send(hello_frame(token, rid));
  auto o = next();
  return o.value_or("");
}

std::string Client::join(const std::string& ch, std::optional<uint64_t> since) {
  send(join_frame(ch, since));
  return expect("joined");
}

std::optional<int> Client::wait_closed(std::chrono::milliseconds timeout) {
  std::unique_lock lk(mu_);
  if (!cv_.wait_for(lk, timeout, [&] { return closed_; })) return std::nullopt;
  return close_code_;
}

bool Client::closed() {
  std::lock_guard lk(mu_);
  return closed_;
}

std::vector<std::string> until_msg(Client& c, const std::string& id) {
  std::vector<std::string> seen;
  for (;;) {
    auto o = c.next();
    if (!o) {
      ADD_FAILURE() << "msg " << id << " never came";
      return seen;
    }
    if (op_of(*o) == "msg" && json_str(*o, "id") == id) return seen;
    seen.push_back(*o);
  }
}

std::string ack_or_error(Client& c, std::chrono::milliseconds timeout) {
  for (;;) {
    auto o = c.next(timeout);
    if (!o) return "";
    const std::string op = op_of(*o);
    if (op == "ack" || op == "error") return *o;
  }
}

std::unique_ptr<Client> connect_with_token(uint16_t port, const std::string& token, Wire wire) {
  auto c = Client::connect(port, wire);
  const std::string welcome = c->hello(token);
  EXPECT_EQ(op_of(welcome), "welcome") << welcome;
  return c;
}

std::unique_ptr<Client> connect_as(uint16_t port, const std::string& user,
                                   const std::string& tenant, Wire wire) {
  auto c = Client::connect(port, wire);
  const std::string welcome = c->hello(ServerProcess::token(user, tenant));
  EXPECT_EQ(op_of(welcome), "welcome") << welcome;
  EXPECT_EQ(json_str(welcome, "tenant"), tenant) << welcome;
  return c;
}

}  // namespace parley::testing
