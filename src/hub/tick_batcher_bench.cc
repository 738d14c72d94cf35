// Micro-benchmarks of the tick batcher (TickBatcher): the cost of one tick of
// one channel, from the events' arrival on the loop (deliver) to every
// member's gathered frame being written, for channels of 20 and 100 members.
// BM_TickWorldBig: one loop of world-big, with and without interest areas.
// Not run by the tests: see docs/benchmarks.md.
//
// Each member is a fake session (as session::ClientSession::send) in front of
// a real net::Connection:
// - BM_TickMsg, BM_TickState: the connection's transport completes every
//   write at once, so the figure is the batcher plus the write queue's work
//   per frame (send, flush, write_queued, releasing the slices);
// - BM_TickMsgUnix, BM_TickMsgWs: a real Unix-socket or WebSocket (over
//   loopback TCP) connection, its gathered non-blocking sendmsg, one per
//   member, the peer drained after each tick; their time is mostly the
//   kernel's, their instruction count (callgrind) is user space.
// The body runs on loop 0 of a real LoopGroup (TickBatcher checks that it runs
// on its own loop); the fan-out's timers sit on an io_context nobody runs, and
// each tick is flushed directly.
#include <benchmark/benchmark.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/connect_pair.hpp>
#include <sys/uio.h>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "metrics/metrics.h"
#include "common/bench_alloc_counter.h"
#include "hub/tick_batcher.h"
#include "net/connection.h"
#include "net/stream_connection.h"
#include "net/ws_connection.h"
#include "protocol/encoder.h"
#include "runtime/loop_group.h"

namespace parley::hub {

struct TickBatcherTestPeer {
  // The tick as its timer would fire it, then every slice of its drain.
  static void flush(TickBatcher& fan, uint32_t tick_ms) {
    if (fan.ticks_.contains(tick_ms)) fan.on_tick(tick_ms);
    while (fan.ready_head_ < fan.ready_.size()) fan.drain();
  }
};

namespace {

constexpr uint32_t kTickMs = 20;

// A connection whose every write completes at once, on the caller's stack.
class NullConnection final : public net::Connection {
 public:
  NullConnection(boost::asio::io_context& io, metrics::ThreadMetrics& m)
      : Connection(0, m), exec_(io.get_executor()) {}
  net::Transport transport() const override { return net::Transport::kWebSocket; }
  uint64_t bytes_written = 0;

 private:
  void start_reading() override {}
  boost::asio::any_io_executor executor() override { return exec_; }
  boost::asio::any_io_executor exec_;
  size_t frame_header(const net::OutFrame&, uint8_t*) const override { return 0; }
  ssize_t write_some(const struct iovec* iov, int count) override {
    ssize_t n = 0;
    for (int i = 0; i < count; ++i) n += static_cast<ssize_t>(iov[i].iov_len);
    bytes_written += static_cast<uint64_t>(n);
    return n;
  }
  int native_fd() override { return -1; }
  void wait_writable() override { std::abort(); }  // every write completes at once
  void close_transport(int, const std::string&) override { finish(); }
  void abort_transport() override {}
  void set_max_frame(size_t) override {}
  size_t read_buffer_bytes() const override { return 0; }
  void discard_input() override {}
};

// Stands in for session::ClientSession::send.
class FakeSession final : public Subscriber {
 public:
  FakeSession(uint64_t conn_id, std::shared_ptr<net::Connection> conn)
      : conn_id_(conn_id), user_("user-" + std::to_string(conn_id)), conn_(std::move(conn)) {}
  uint64_t conn_id() const override { return conn_id_; }
  const std::string& user_id() const override { return user_; }
  unsigned loop() const override { return 0; }
  bool gone() const override { return false; }
  void send(net::OutFrame&& frame) override {
    if (!conn_->send(std::move(frame))) std::abort();  // writes complete within the tick
  }

 private:
  uint64_t conn_id_;
  std::string user_;
  std::shared_ptr<net::Connection> conn_;
};

using local_socket = boost::asio::local::stream_protocol::socket;
using tcp = boost::asio::ip::tcp;

// A WebSocket connection past its handshake, and the raw socket of its peer.
std::shared_ptr<net::WsConnection> open_ws(boost::asio::io_context& io, tcp::acceptor& acceptor,
                                           metrics::ThreadMetrics& metrics, tcp::socket& peer) {
  peer.connect(acceptor.local_endpoint());
  tcp::socket ours(io);
  acceptor.accept(ours);
  // Past the handshake: the benchmark measures the frames, not the upgrade.
  auto ws = std::make_shared<net::WsConnection>(std::move(ours), 0, metrics, 1 << 20, "");
  peer.non_blocking(true);
  return ws;
}

// Runs `fn` on loop 0 of a fresh LoopGroup and waits for it.
template <typename Fn>
void on_loop(Fn fn) {
  runtime::LoopGroup loops(1);
  loops.start();
  std::promise<void> done;
  loops.run_on(0, [&] {
    fn();
    done.set_value();
  });
  done.get_future().wait();
}

std::string body_of(size_t bytes) {
  std::string body = R"({"kind":"text","n":42,"text":")";
  while (body.size() + 2 < bytes) body += "lorem ipsum dolor sit amet "[body.size() % 27];
  return body + "\"}";
}

// Runs the write completions of a tick, then reads what the peers received.
// Not inlined, so that a profile shows its cost per tick (complete_and_drain).
[[gnu::noinline]] uint64_t complete_and_drain(boost::asio::io_context& io,
                                              std::vector<local_socket>& unix_peers,
                                              std::vector<tcp::socket>& tcp_peers,
                                              std::vector<char>& buf) {
  io.poll();
  io.restart();
  uint64_t bytes = 0;
  boost::system::error_code ec;
  for (auto& p : unix_peers) bytes += p.read_some(boost::asio::buffer(buf), ec);
  for (auto& p : tcp_peers) bytes += p.read_some(boost::asio::buffer(buf), ec);
  return bytes;
}

enum class Kind { kMsg, kState };
enum class Sink { kNull, kUnix, kWs };

// Args: members, events per tick. Msg: sequenced messages, every member gets
// all of them in one slice. State: each event from a different member
// (round-robin), not echoed to its sender, so most members get two slices.
void run_tick(benchmark::State& state, Kind kind, Sink sink) {
  const int members = static_cast<int>(state.range(0));
  const int events = static_cast<int>(state.range(1));
  on_loop([&] {
    boost::asio::io_context timers;  // never run: the fan-out's tick timers
    boost::asio::io_context io;      // the connections' completions, polled after each tick
    metrics::ThreadMetrics metrics;
    std::vector<std::shared_ptr<NullConnection>> nulls;
    std::vector<local_socket> peers;
    std::vector<tcp::socket> ws_peers;
    tcp::acceptor acceptor(io, tcp::endpoint(boost::asio::ip::address_v4::loopback(), 0));
    TickBatcher fan(0, timers, metrics);
    const std::string key = std::string("bench") + '\0' + "chat:room-17";
    for (int i = 0; i < members; ++i) {
      std::shared_ptr<net::Connection> conn;
      if (sink == Sink::kNull) {
        nulls.push_back(std::make_shared<NullConnection>(io, metrics));
        conn = nulls.back();
      } else if (sink == Sink::kWs) {
        ws_peers.emplace_back(io);
        conn = open_ws(io, acceptor, metrics, ws_peers.back());
      } else {
        local_socket ours(io);
        peers.emplace_back(io);
        boost::asio::local::connect_pair(ours, peers.back());
        peers.back().non_blocking(true);
        conn = std::make_shared<net::UnixConnection>(std::move(ours), 0, metrics, 1 << 20,
                                                     net::Transport::kUnix);
      }
      fan.add_member(key, kTickMs, std::make_shared<FakeSession>(i + 1, std::move(conn)));
    }
    // Completes the writes of a tick and reads them on the peers' side.
    std::vector<char> sink_buf(sink == Sink::kNull ? 0 : 1 << 20);
    uint64_t bytes_read = 0;
    auto complete_writes = [&] {
      if (sink != Sink::kNull) bytes_read += complete_and_drain(io, peers, ws_peers, sink_buf);
    };

    // The events as the shard posts them (encoded once, before the loop).
    const std::string body = body_of(100);
    std::vector<ChannelEvent> tick;
    for (int e = 0; e < events; ++e) {
      auto json = std::make_shared<std::string>();
      const uint64_t sender = e % members + 1;
      const std::string from = "user-" + std::to_string(sender);
      if (kind == Kind::kMsg) {
        protocol::encode_msg(*json, {"chat:room-17", 1000u + e, from, "c-" + std::to_string(e),
                                     1764460800123, body});
        tick.push_back(ChannelEvent{std::move(json), 0, {}, {}, 0});
      } else {
        protocol::encode_state(*json, "chat:room-17", from, "pos", body);
        std::string coalesce = std::to_string(sender) + '\0' + "pos";
        // Distinct keys per event, so that none coalesces away.
        coalesce += std::to_string(e);
        tick.push_back(ChannelEvent{std::move(json), sender, {}, std::move(coalesce), 0});
      }
    }

    // One tick off the clock, to check what each member gets.
    for (const auto& ev : tick) fan.deliver(key, ev);
    TickBatcherTestPeer::flush(fan, kTickMs);
    complete_writes();
    uint64_t expected = 0;
    for (int i = 0; i < members; ++i) {
      uint64_t own = 0;
      if (kind == Kind::kState) {
        for (int e = 0; e < events; ++e) own += (e % members == i);
      }
      expected += events - own;
    }
    if (metrics.deliveries.load() != expected) {
      state.SkipWithError("unexpected number of deliveries");
      return;
    }

    const uint64_t allocs = bench::t_allocations;
    for (auto _ : state) {
      for (const auto& ev : tick) fan.deliver(key, ev);
      TickBatcherTestPeer::flush(fan, kTickMs);
      complete_writes();
    }
    state.counters["allocs"] = benchmark::Counter(
        static_cast<double>(bench::t_allocations - allocs), benchmark::Counter::kAvgIterations);
    uint64_t bytes = bytes_read;
    for (const auto& c : nulls) bytes += c->bytes_written;
    state.SetBytesProcessed(static_cast<int64_t>(bytes));
    state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(expected));
    // Time of one tick divided by the members: the cost per receiver.
    state.counters["per_member"] = benchmark::Counter(
        members, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  });
}

void BM_TickMsg(benchmark::State& state) { run_tick(state, Kind::kMsg, Sink::kNull); }
void BM_TickState(benchmark::State& state) { run_tick(state, Kind::kState, Sink::kNull); }
void BM_TickMsgUnix(benchmark::State& state) { run_tick(state, Kind::kMsg, Sink::kUnix); }
void BM_TickMsgWs(benchmark::State& state) { run_tick(state, Kind::kMsg, Sink::kWs); }

void tick_args(benchmark::internal::Benchmark* b) {
  b->ArgNames({"members", "events"});
  for (int members : {20, 100}) {
    for (int events : {1, 10, 50}) b->Args({members, events});
  }
}
BENCHMARK(BM_TickMsg)->Apply(tick_args);
BENCHMARK(BM_TickState)->Apply(tick_args);
BENCHMARK(BM_TickMsgUnix)->ArgNames({"members", "events"})->Args({20, 10})->Args({100, 10});
BENCHMARK(BM_TickMsgWs)->ArgNames({"members", "events"})->Args({20, 10})->Args({100, 10});

// One loop's tick of world-big (issue 13): 6,000 avatars on 2 loops, so 3,000
// members here, state at 10 Hz and tick 20 ms, so 1,200 states per tick (from
// every 5th avatar, either loop). Avatars sit on a 46 x 23 grid of cells, ~5.7
// per cell, ~51 in a 3 x 3 neighbourhood. Arg grid: 1 with interest areas (the
// states carry their cell), 0 without (every state to every member).
void BM_TickWorldBig(benchmark::State& state) {
  const bool grid = state.range(0) != 0;
  constexpr int kAvatars = 6000, kMembers = 3000, kEvents = 1200;
  auto cell_of_avatar = [](int id) { return Cell{(id - 1) % 46, ((id - 1) / 46) % 23, 0}; };
  on_loop([&] {
    boost::asio::io_context timers;
    boost::asio::io_context io;
    metrics::ThreadMetrics metrics;
    std::vector<std::shared_ptr<NullConnection>> nulls;
    TickBatcher fan(0, timers, metrics);
    const std::string key = std::string("bench") + '\0' + "world:big";
    for (int i = 1; i <= kMembers; ++i) {
      nulls.push_back(std::make_shared<NullConnection>(io, metrics));
      fan.add_member(key, kTickMs, std::make_shared<FakeSession>(i, nulls.back()));
    }
    const std::string body = body_of(60);
    auto make_state = [&](int id, bool positioned) {
      auto json = std::make_shared<std::string>();
      protocol::Position pos{{1.0 * id, 2.0 * id, 0}, 2};
      protocol::encode_state(*json, "world:big", "user-" + std::to_string(id), "pos", body, &pos);
      std::optional<Cell> cell;
      if (positioned) cell = cell_of_avatar(id);
      return ChannelEvent{std::move(json), static_cast<uint64_t>(id), {},
                          std::to_string(id) + '\0' + "pos", 0, cell};
    };
    if (grid) {  // every member positions itself once
      for (int i = 1; i <= kMembers; ++i) fan.deliver(key, make_state(i, true));
      TickBatcherTestPeer::flush(fan, kTickMs);
      io.poll();
      io.restart();
    }
    std::vector<ChannelEvent> tick;
    for (int e = 0; e < kEvents; ++e) tick.push_back(make_state(e * (kAvatars / kEvents) + 1, grid));
    const uint64_t before = metrics.deliveries.load();
    uint64_t bytes_before = 0;
    for (const auto& c : nulls) bytes_before += c->bytes_written;
    for (auto _ : state) {
      for (const auto& ev : tick) fan.deliver(key, ev);
      TickBatcherTestPeer::flush(fan, kTickMs);
      io.poll();
      io.restart();
    }
    state.counters["deliveries"] = benchmark::Counter(
        static_cast<double>(metrics.deliveries.load() - before), benchmark::Counter::kAvgIterations);
    state.SetItemsProcessed(static_cast<int64_t>(metrics.deliveries.load() - before));
    uint64_t bytes = 0;
    for (const auto& c : nulls) bytes += c->bytes_written;
    state.counters["bytes"] = benchmark::Counter(static_cast<double>(bytes - bytes_before),
                                                 benchmark::Counter::kAvgIterations);
  });
}
BENCHMARK(BM_TickWorldBig)->ArgName("grid")->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace parley::hub

BENCHMARK_MAIN();
