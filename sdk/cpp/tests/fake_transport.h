// A transport with no network for the state machine's tests: the test opens,
// feeds frames to and drops the current connection by hand, and reads what
// the client sent. Events are queued and delivered from poll(), as the
// Transport contract requires. Paired with a fake clock the test advances.
//
// Thread: the test's thread.
#pragma once

#include <gtest/gtest.h>
#include <parley/client.h>

#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace parley::testing {

class FakeTransport : public Transport {
 public:
  struct Conn : Connection {
    FakeTransport* t;
    std::size_t idx;
    void send(std::string frame, bool) override { t->sent_[idx].push_back(Json::parse(frame, nullptr, false)); }
    void close(int, std::string_view) override { t->closed_[idx] = true; }
    ~Conn() override { t->alive_[idx] = false; }
  };

  std::unique_ptr<Connection> connect(const std::string& url, const ConnectOptions&,
                                      ConnectionHandler& handler) override {
    auto c = std::make_unique<Conn>();
    c->t = this;
    c->idx = handlers_.size();
    handlers_.push_back(&handler);
    urls.push_back(url);
    sent_.emplace_back();
    alive_.push_back(true);
    closed_.push_back(false);
    return c;
  }
  void poll(std::chrono::milliseconds) override {
    auto q = std::move(queue_);
    queue_.clear();
    for (auto& f : q) f();
  }

  // ---- the test's side, on the newest connection ----
  int count() const { return static_cast<int>(handlers_.size()); }
  bool alive() const { return !alive_.empty() && alive_.back() && !closed_.back(); }
  void open() { post([](ConnectionHandler* h) { h->on_open(); }); }
  void frame(const Json& j) {
    post([s = j.dump()](ConnectionHandler* h) { h->on_frame(s); });
  }
  void raw(std::string bytes) {
    post([bytes](ConnectionHandler* h) { h->on_frame(bytes); });
  }
  void drop(int code = 1006, std::string reason = "gone") {
    post([code, reason](ConnectionHandler* h) { h->on_closed(code, reason); });
  }
  /// Frames the newest connection sent with this op.
  std::vector<Json> sent(const std::string& op) const {
    std::vector<Json> out;
    for (auto& j : sent_.back()) {
      if (j.is_object() && j.value("op", "") == op) out.push_back(j);
    }
    return out;
  }
  const std::vector<Json>& all_sent() const { return sent_.back(); }

  std::vector<std::string> urls;

 private:
  void post(std::function<void(ConnectionHandler*)> f) {
    const std::size_t i = handlers_.size() - 1;
    queue_.push_back([this, i, f = std::move(f)] {
      if (alive_[i] && !closed_[i]) f(handlers_[i]);
    });
  }
  std::vector<ConnectionHandler*> handlers_;
  std::vector<std::vector<Json>> sent_;
  std::vector<bool> alive_;
  std::vector<bool> closed_;
  std::deque<std::function<void()>> queue_;
};

/// A client on a fake transport and clock, with the hello answered helpers.
struct Harness {
  std::shared_ptr<FakeTransport> t = std::make_shared<FakeTransport>();
  int64_t now = 1000000;
  double u = 0.5;  // every random draw
  std::unique_ptr<Client> client;

  explicit Harness(std::function<void(ClientOptions&)> tweak = nullptr) {
    ClientOptions o;
    o.url = "ws://fake/v1/ws";
    o.token = "T1";
    o.transport = t;
    o.clock = [this] { return now; };
    o.random = [this] { return u; };
    o.id_prefix = "p-";
    if (tweak) tweak(o);
    client = std::make_unique<Client>(std::move(o));
  }
  void poll() {
    for (int i = 0; i < 3; i++) client->poll();
  }
  void advance(int64_t ms) {
    // In steps, so timers that re-arm (liveness) run as they would.
    const int64_t end = now + ms;
    while (now < end) {
      now = std::min(end, now + 100);
      poll();
    }
  }
  /// Opens the newest connection and answers its hello.
  void welcome(const std::string& conn = "c1", int64_t heartbeat_ms = 25000) {
    t->open();
    poll();
    auto hello = t->sent("hello");
    ASSERT_FALSE(hello.empty());
    t->frame({{"op", "welcome"}, {"rid", hello.back()["rid"]}, {"conn", conn}, {"user", "u1"},
              {"tenant", "demo"}, {"heartbeat_ms", heartbeat_ms}});
    poll();
  }
  /// Answers the newest connection's latest join of `ch`.
  void joined(const std::string& ch, int64_t seq, bool recovered = true, Json extra = Json::object()) {
    auto joins = t->sent("join");
    Json rid;
    for (auto& j : joins) {
      if (j["ch"] == ch) rid = j["rid"];
    }
    ASSERT_FALSE(rid.is_null()) << "no join of " << ch;
    Json f = {{"op", "joined"}, {"rid", rid}, {"ch", ch}, {"seq", seq}, {"recovered", recovered}};
    for (auto& [k, v] : extra.items()) f[k] = v;
    t->frame(f);
    poll();
  }
  static Json msg(const std::string& ch, int64_t seq, Json body = Json::object()) {
    return {{"op", "msg"}, {"ch", ch}, {"seq", seq}, {"from", "u2"}, {"id", "m" + std::to_string(seq)},
            {"ts", 1}, {"body", body}};
  }
};

}  // namespace parley::testing
