// The receive path on one core: server frames (JSON) decoded, sequenced by a
// joined channel and delivered to the application's on_msg, through the
// public API only. The transport hands over pre-encoded frames from poll(),
// as the default transport does after a socket read, so no socket time is in
// the figure; what is measured is the SDK's own cost per message.
//
// Shape (sdk/cpp/bench/README.md): `msg` frames as the server writes them,
// {"op":"msg","ch":"chat:bench","seq":N,"from":"u-17","id":"k3v9x2ab-N",
// "ts":1764460800123,"body":{...}} with a ~100-byte body, sent in batches
// (JSON arrays) of 1, 10 and 50 msgs, one batch per poll().
#include <benchmark/benchmark.h>
#include <parley/client.h>

#include <deque>
#include <memory>
#include <string>
#include <vector>

namespace {

using parley::Json;

class FeedTransport final : public parley::Transport {
 public:
  struct Conn final : parley::Connection {
    FeedTransport* t;
    void send(std::string frame, bool) override { t->sent.push_back(std::move(frame)); }
    void close(int, std::string_view) override {}
  };
  std::unique_ptr<parley::Connection> connect(const std::string&, const parley::ConnectOptions&,
                                              parley::ConnectionHandler& h) override {
    handler = &h;
    opened = false;
    auto c = std::make_unique<Conn>();
    c->t = this;
    return c;
  }
  void poll(std::chrono::milliseconds) override {
    if (!handler) return;
    if (!opened) {
      opened = true;
      handler->on_open();
    }
    for (const std::string* f : next) handler->on_frame(*f);
    next.clear();
  }
  parley::ConnectionHandler* handler = nullptr;
  bool opened = false;
  std::vector<const std::string*> next;
  std::vector<std::string> sent;
};

std::string body_of(int64_t seq) {
  // ~100 bytes of JSON, the shape of a chat line or a game event.
  Json b = {{"text", "the quick brown fox jumps over the lazy dog, again and again"},
            {"i", seq},
            {"kind", "chat"},
            {"room", 7}};
  return b.dump();
}

std::string msg_frame(int64_t seq) {
  return R"({"op":"msg","ch":"chat:bench","seq":)" + std::to_string(seq) +
         R"(,"from":"u-17","id":"k3v9x2ab-)" + std::to_string(seq) + R"(","ts":1764460800123,"body":)" +
         body_of(seq) + "}";
}

// A pool of batches with rising seqs; a fresh client (joined at seq 0) per pass over it.
struct Pool {
  std::vector<std::string> batches;
  int per_batch;
  Pool(int batch, int count) : per_batch(batch) {
    int64_t seq = 1;
    for (int b = 0; b < count; b++) {
      std::string s = batch == 1 ? std::string() : "[";
      for (int k = 0; k < batch; k++) {
        if (k) s += ",";
        s += msg_frame(seq++);
      }
      if (batch != 1) s += "]";
      batches.push_back(std::move(s));
    }
  }
};

struct Session {
  std::shared_ptr<FeedTransport> t = std::make_shared<FeedTransport>();
  std::unique_ptr<parley::Client> client;
  int64_t delivered = 0;
  int64_t bytes = 0;

  Session() {
    parley::ClientOptions o;
    o.url = "ws://bench/v1/ws";
    o.token = "t";
    o.transport = t;
    client = std::make_unique<parley::Client>(std::move(o));
    auto ch = client->channel("chat:bench");
    ch.on_msg([this](const parley::Message& m) {
      delivered++;
      bytes += static_cast<int64_t>(m.id.size());
      benchmark::DoNotOptimize(m.body);
    });
    ch.join();
    client->poll();  // open; the client says hello
    const std::string welcome = R"({"op":"welcome","rid":1,"conn":"c1","user":"u1","tenant":"demo","heartbeat_ms":25000})";
    t->next.push_back(&welcome);
    client->poll();  // welcome; the client sends join (rid 2)
    const std::string joined = R"({"op":"joined","rid":2,"ch":"chat:bench","seq":0,"recovered":false})";
    t->next.push_back(&joined);
    client->poll();
  }
};

void BM_ReceiveMsgs(benchmark::State& state) {
  const int batch = static_cast<int>(state.range(0));
  const Pool pool(batch, std::max(1, 20000 / batch));
  auto session = std::make_unique<Session>();
  std::size_t next = 0;
  int64_t total = 0;
  for (auto _ : state) {
    if (next == pool.batches.size()) {
      state.PauseTiming();
      total += session->delivered;
      session = std::make_unique<Session>();
      next = 0;
      state.ResumeTiming();
    }
    session->t->next.push_back(&pool.batches[next++]);
    session->client->poll();
  }
  total += session->delivered;
  if (total != static_cast<int64_t>(state.iterations()) * batch) state.SkipWithError("not every msg was delivered");
  state.SetItemsProcessed(total);
  state.counters["msgs_per_s"] = benchmark::Counter(static_cast<double>(total), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_ReceiveMsgs)->Arg(1)->Arg(10)->Arg(50);

}  // namespace

BENCHMARK_MAIN();
