// Slow consumers (PROTOCOL.md "Errors"): a client whose outgoing queue exceeds
// the tenant's max_queue_bytes gets {"op":"bye","code":"slow_consumer"} and is
// closed with 4010; it can reconnect and join with `since` to recover what it
// missed. One slow client never holds up the channel's other members or its
// publishers, and nothing acknowledged is lost because of it.
//
// The slow client is a hand-made WebSocket peer on a socket with a tiny receive
// buffer that stops reading after its join, so the server's queue for it grows.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "support/client.h"
#include "support/raw_ws.h"
#include "support/server_process.h"

namespace parley::testing {
namespace {

using Clock = std::chrono::steady_clock;

// A 64 KiB queue per connection (the smallest the config accepts with the
// default 64 KiB max_message_bytes); no rate limits; `long` keeps every message
// a test writes reachable by `since`.
constexpr const char* kTenantExtra =
    "publish_per_sec = 0\npublish_per_conn_sec = 0\nmax_queue_bytes = 65536\n"
    "\n[tenants.demo.namespaces.long]\nhistory = 1000000\n";
// ~4 KiB messages in batches of 10, one batch per tick (see run_with_a_slow_consumer):
// a tick's frame (~40 KiB) stays below the 64 KiB cap, so only a client that
// stops reading can exceed it.
constexpr size_t kBodyPad = 4096;
constexpr int kBatch = 10;
constexpr int kMaxBatches = 300;  // ~12 MiB at most before the test gives up

// A WebSocket client that reads only when asked, on a socket whose receive
// buffer is set small before connecting (so the window it offers stays small).
class StalledPeer {
 public:
  struct Frame {
    uint8_t opcode = 0;
    std::string payload;
  };

  static std::unique_ptr<StalledPeer> open(uint16_t port) {
    auto p = std::unique_ptr<StalledPeer>(new StalledPeer());
    p->fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    EXPECT_GE(p->fd_, 0);
    int rcvbuf = 4096;
    ::setsockopt(p->fd_, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::connect(p->fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    p->send_bytes(RawWs::upgrade_request());
    const auto deadline = Clock::now() + std::chrono::seconds(5);
    size_t end;
    while ((end = p->in_.find("\r\n\r\n")) == std::string::npos && p->fill(deadline)) {
    }
    EXPECT_NE(end, std::string::npos) << "no answer to the upgrade";
    EXPECT_EQ(p->in_.rfind("HTTP/1.1 101", 0), 0u) << p->in_;
    if (end != std::string::npos) p->in_.erase(0, end + 4);
    return p;
  }
  ~StalledPeer() {
    if (fd_ >= 0) ::close(fd_);
  }

  void send_text(const std::string& text) { send_bytes(encode_frame({ws_op::kText, text})); }
  void send_close(uint16_t code) { send_bytes(encode_frame({ws_op::kClose, close_payload(code)})); }

  // The next complete server message (continuations joined); nullopt on timeout or EOF.
  std::optional<Frame> read_frame(std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
    const auto deadline = Clock::now() + timeout;
    Frame msg;
    for (;;) {
      auto f = take();
      while (!f) {
        if (!fill(deadline)) return std::nullopt;
        f = take();
      }
      if (f->opcode != ws_op::kContinuation) msg.opcode = f->opcode;
      msg.payload += f->payload;
      if (f->fin) return msg;
    }
  }

  // The server objects up to and including the first with op `op` (in order).
  std::vector<std::string> read_until_op(const std::string& op) {
    std::vector<std::string> seen;
    while (auto f = read_frame()) {
      if (f->opcode != ws_op::kText) continue;
      for (auto& o : json_frame_objects(f->payload)) {
        seen.push_back(o);
        if (op_of(o) == op) return seen;
      }
    }
    return seen;
  }

  // True when the server closes TCP (EOF or reset) within the timeout.
  bool wait_eof(std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
    const auto deadline = Clock::now() + timeout;
    while (fill(deadline)) in_.clear();
    return eof_;
  }

 private:
  struct RawFrame {
    bool fin;
    uint8_t opcode;
    std::string payload;
  };

  StalledPeer() = default;

  void send_bytes(const std::string& bytes) {
    size_t off = 0;
    while (off < bytes.size()) {
      ssize_t n = ::send(fd_, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
      if (n <= 0) return;
      off += static_cast<size_t>(n);
    }
  }

  // Reads what is there (waiting up to the deadline); false on timeout or EOF.
  bool fill(Clock::time_point deadline) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return false;
    pollfd pfd{fd_, POLLIN, 0};
    if (::poll(&pfd, 1, static_cast<int>(left.count())) <= 0) return false;
    char buf[65536];
    ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n <= 0) {
      eof_ = true;
      return false;
    }
    in_.append(buf, static_cast<size_t>(n));
    return true;
  }

  // One complete frame off the front of in_ (server frames are unmasked).
  std::optional<RawFrame> take() {
    if (in_.size() < 2) return std::nullopt;
    const auto* b = reinterpret_cast<const uint8_t*>(in_.data());
    uint64_t len = b[1] & 0x7f;
    size_t head = 2;
    if (len == 126) {
      if (in_.size() < 4) return std::nullopt;
      len = (uint64_t{b[2]} << 8) | b[3];
      head = 4;
    } else if (len == 127) {
      if (in_.size() < 10) return std::nullopt;
      len = 0;
      for (int i = 0; i < 8; ++i) len = (len << 8) | b[2 + i];
      head = 10;
    }
    if (in_.size() < head + len) return std::nullopt;
    RawFrame f{(b[0] & 0x80) != 0, static_cast<uint8_t>(b[0] & 0x0f), in_.substr(head, len)};
    in_.erase(0, head + len);
    return f;
  }

  int fd_ = -1;
  std::string in_;
  bool eof_ = false;
};

// What one slow-consumer run saw.
struct SlowRun {
  int64_t disconnects_before = 0;
  int64_t disconnects_after = 0;
  std::vector<std::string> slow_objects;   // what the slow peer got after its join
  std::optional<int> slow_close_code;      // of the server's close frame
  bool slow_eof = false;
  int64_t slow_last_seq = 0;               // the last msg seq the slow peer got
  int published = 0;                       // every one acked, seqs 1..published
  std::vector<std::string> publisher_problems;
  std::vector<std::string> observer_msgs;  // in arrival order
};

class SlowConsumerTest : public SharedServerTest<SlowConsumerTest> {
 public:
  static ServerSpec server_spec() { return spec_with_tenants(default_tenants_toml(kTenantExtra)); }

 protected:
  static int64_t slow_consumer_disconnects() {
    auto r = http_request(server_->http_port(), "GET", "/metrics");
    const std::string name = "\nparley_slow_consumer_disconnects_total ";
    auto at = r.body.find(name);
    EXPECT_NE(at, std::string::npos) << "metric missing";
    return at == std::string::npos ? -1 : std::stoll(r.body.substr(at + name.size()));
  }

  static std::string big_pub(const std::string& ch, int i) {
    return pub_frame(ch, "big" + std::to_string(i),
                     R"({"i":)" + std::to_string(i) + R"(,"pad":")" + std::string(kBodyPad, 'x') +
                         R"("})",
                     i);
  }

  // Publishes the next `n` messages and waits for their acks (seqs in order).
  static void publish(Client& pub, const std::string& ch, int n, SlowRun& run) {
    const int first = run.published + 1;
    for (int i = first; i < first + n; ++i) pub.send(big_pub(ch, i));
    for (int i = first; i < first + n; ++i) {
      auto ack = pub.expect("ack");
      if (json_int(ack, "seq") != i || json_bool(ack, "dup") != false) {
        run.publisher_problems.push_back("pub " + std::to_string(i) + ": " + ack);
      }
    }
    run.published += n;
  }

  // Reads the observer's msgs until it has every published one (bounded).
  static void observe(Client& observer, SlowRun& run) {
    const auto deadline = Clock::now() + std::chrono::seconds(10);
    while (run.observer_msgs.size() < static_cast<size_t>(run.published) && Clock::now() < deadline) {
      auto o = observer.next(std::chrono::seconds(5));
      if (!o) return;
      if (op_of(*o) == "msg") run.observer_msgs.push_back(*o);
    }
  }

  // A slow peer joins `ch` and stops reading; a publisher publishes until the
  // server drops the slow peer, then a few more; an observer reads everything.
  // The publisher waits for the observer to receive each batch, so a tick
  // carries one batch (~40 KiB) and only a client that stops reading can
  // exceed the 64 KiB queue.
  static SlowRun run_with_a_slow_consumer(const std::string& ch) {
    SlowRun run;
    run.disconnects_before = slow_consumer_disconnects();
    auto slow = StalledPeer::open(server_->http_port());
    slow->send_text(hello_frame(ServerProcess::token("slow")));
    EXPECT_EQ(op_of(slow->read_until_op("welcome").back()), "welcome");
    slow->send_text(join_frame(ch, std::nullopt, 2));
    EXPECT_EQ(op_of(slow->read_until_op("joined").back()), "joined");
    // From here on the slow peer reads nothing. (The kernel still takes a few
    // MiB into socket buffers before the server's queue for it starts to grow.)

    auto observer = Client::connect(server_->http_port());
    observer->hello(ServerProcess::token("observer"));
    observer->join(ch);
    auto pub = Client::connect(server_->tcp_port(), Wire::kTcp);
    pub->hello(ServerProcess::token("pub"));
    pub->join(ch);

    for (int b = 0; b < kMaxBatches; ++b) {
      publish(*pub, ch, kBatch, run);
      observe(*observer, run);
      if (slow_consumer_disconnects() > run.disconnects_before) break;
    }
    run.disconnects_after = slow_consumer_disconnects();

    // Now read what the server sent the slow peer before dropping it.
    while (auto f = slow->read_frame()) {
      if (f->opcode == ws_op::kText) {
        for (auto& o : json_frame_objects(f->payload)) run.slow_objects.push_back(o);
      } else if (f->opcode == ws_op::kClose) {
        run.slow_close_code = f->payload.size() >= 2
                                  ? (uint8_t(f->payload[0]) << 8) | uint8_t(f->payload[1])
                                  : 1005;
        slow->send_close(static_cast<uint16_t>(*run.slow_close_code));
        break;
      }
    }
    run.slow_eof = slow->wait_eof();
    for (const auto& o : run.slow_objects) {
      if (op_of(o) == "msg") run.slow_last_seq = json_int(o, "seq").value_or(-1);
    }

    for (int b = 0; b < 3; ++b) {  // the channel goes on without it
      publish(*pub, ch, kBatch, run);
      observe(*observer, run);
    }
    return run;
  }
};

TEST_F(SlowConsumerTest, SlowConsumerGetsByeSlowConsumerAndIsClosedWith4010) {
  auto run = run_with_a_slow_consumer("long:slow-bye");
  EXPECT_EQ(run.disconnects_after, run.disconnects_before + 1)
      << "parley_slow_consumer_disconnects_total after " << run.published << " messages";
  ASSERT_FALSE(run.slow_objects.empty());
  EXPECT_EQ(run.slow_objects.back(), R"({"op":"bye","code":"slow_consumer"})");
  EXPECT_EQ(run.slow_close_code, 4010);
  EXPECT_TRUE(run.slow_eof) << "the socket was not closed";
  // Before the bye it got whole frames with a gap-free prefix of the channel.
  int64_t expect = 1;
  for (size_t i = 0; i + 1 < run.slow_objects.size(); ++i) {
    const std::string& o = run.slow_objects[i];
    ASSERT_NE(op_of(o), "") << "not a server object: " << o.substr(0, 200);
    if (op_of(o) == "msg") {
      ASSERT_EQ(json_int(o, "seq"), expect++) << o.substr(0, 200);
    }
  }
  EXPECT_LT(run.slow_last_seq, run.published);
}

TEST_F(SlowConsumerTest, OtherMembersAndPublishersAreNotHeldUpByASlowConsumer) {
  auto run = run_with_a_slow_consumer("long:slow-others");
  EXPECT_GT(run.disconnects_after, run.disconnects_before);
  EXPECT_TRUE(run.publisher_problems.empty())
      << (run.publisher_problems.empty() ? "" : run.publisher_problems.front());
  ASSERT_EQ(run.observer_msgs.size(), static_cast<size_t>(run.published));
  for (int i = 1; i <= run.published; ++i) {
    ASSERT_EQ(json_int(run.observer_msgs[i - 1], "seq"), i) << run.observer_msgs[i - 1];
  }
}

TEST_F(SlowConsumerTest, SlowConsumerRecoversEverythingByJoiningWithSince) {
  const std::string ch = "long:slow-resume";
  auto run = run_with_a_slow_consumer(ch);
  ASSERT_GT(run.disconnects_after, run.disconnects_before);
  ASSERT_LT(run.slow_last_seq, run.published);

  auto back = Client::connect(server_->http_port());
  back->hello(ServerProcess::token("slow"));
  back->send(join_frame(ch, run.slow_last_seq, 3));
  auto joined = back->next();
  ASSERT_TRUE(joined.has_value());
  EXPECT_EQ(op_of(*joined), "joined") << *joined;
  EXPECT_EQ(json_int(*joined, "seq"), run.published);
  EXPECT_EQ(json_bool(*joined, "recovered"), true);
  for (int64_t seq = run.slow_last_seq + 1; seq <= run.published; ++seq) {
    auto m = back->next();
    ASSERT_TRUE(m.has_value()) << "missing seq " << seq;
    ASSERT_EQ(json_int(*m, "seq"), seq) << *m;
    EXPECT_EQ(json_str(*m, "id"), "big" + std::to_string(seq));
  }
}

TEST_F(SlowConsumerTest, SlowConsumerRecoversEverythingThroughHistoryPages) {
  const std::string ch = "long:slow-history";
  auto run = run_with_a_slow_consumer(ch);
  ASSERT_GT(run.disconnects_after, run.disconnects_before);
  ASSERT_LT(run.slow_last_seq, run.published);

  // Back again, it pages through what it missed (pages well below the cap),
  // then joins at the seq it has reached.
  auto back = Client::connect(server_->http_port());
  back->hello(ServerProcess::token("slow"));
  int64_t have = run.slow_last_seq;
  for (int rid = 1; rid < 1000 && have < run.published; ++rid) {
    back->send(R"({"op":"history","ch":")" + ch + R"(","after":)" + std::to_string(have) +
               R"(,"limit":10,"rid":)" + std::to_string(rid) + "}");
    auto page = back->expect("history");
    ASSERT_EQ(json_int(page, "rid"), rid) << page;
    auto msgs = json_array_items(json_raw(page, "msgs").value_or(""));
    ASSERT_FALSE(msgs.empty()) << "history ends at " << have << " of " << run.published;
    for (const auto& m : msgs) {
      ASSERT_EQ(json_int(m, "seq"), have + 1) << m;
      EXPECT_EQ(json_str(m, "id"), "big" + std::to_string(have + 1));
      ++have;
    }
  }
  EXPECT_EQ(have, run.published);
  back->send(join_frame(ch, have, 2000));
  auto joined = back->expect("joined");
  EXPECT_EQ(json_int(joined, "seq"), run.published) << joined;
  EXPECT_EQ(json_bool(joined, "recovered"), true);
}

}  // namespace
}  // namespace parley::testing
