// The receive path on one core (sdk/conformance/BENCH.md): server frames
// (JSON, or the same frames as MessagePack: arg msgpack) handed over by the
// transport, decoded, sequenced by a joined channel and delivered to the
// application's on_msg, through the public API only. The
// transport replays frames encoded before the clock starts from its poll(),
// as the default transport does after a socket read; no socket time is in the
// figure.
//
// BENCH.md's shape: `msg` frames of ~160 bytes ({"i":N,"text":"<64 x>"}
// bodies), batch 1 (one object per frame) and batch 16 (an array of 16), one
// frame per poll(); 20,000 messages of warm-up then 200,000 timed, 5 runs,
// each in a fresh client; the callback counts messages and sums body.i, and a
// run whose count, last seq or sum is wrong fails. After Google Benchmark's
// table it prints BENCH.md's JSON line per shape, with msgs/s of wall time
// (as the other SDKs report) and of the thread's CPU time (steadier on a
// shared machine).
//
//   taskset -c 1 build/sdk/cpp/tests/parley_client_receive_bench
#include <benchmark/benchmark.h>
#include <parley/client.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace {

constexpr int64_t kWarmup = 20000;
constexpr int64_t kTimed = 200000;

class ReplayTransport final : public parley::Transport {
 public:
  struct Conn final : parley::Connection {
    void send(std::string, bool) override {}
    void close(int, std::string_view) override {}
  };
  std::unique_ptr<parley::Connection> connect(const std::string&, const parley::ConnectOptions&,
                                              parley::ConnectionHandler& h) override {
    handler = &h;
    return std::make_unique<Conn>();
  }
  void poll(std::chrono::milliseconds) override {
    if (!handler) return;
    if (!opened) {
      opened = true;
      handler->on_open();
    }
    if (next) handler->on_frame(*next);
    next = nullptr;
  }
  parley::ConnectionHandler* handler = nullptr;
  bool opened = false;
  const std::string* next = nullptr;
};

std::string msg_frame(int64_t n) {
  return R"({"op":"msg","ch":"chat:bench","seq":)" + std::to_string(n) + R"(,"from":"u-sender","id":"c-)" +
         std::to_string(n) + R"(","ts":)" + std::to_string(1764460800123 + n) + R"(,"body":{"i":)" +
         std::to_string(n) + R"(,"text":")" + std::string(64, 'x') + R"("}})";
}

// A server frame in the session's encoding: the JSON text, or the same value
// as MessagePack (nlohmann's writer standing in for the server's).
std::string wire(const std::string& json, bool msgpack) {
  if (!msgpack) return json;
  const auto v = parley::Json::to_msgpack(parley::Json::parse(json));
  return std::string(v.begin(), v.end());
}

std::vector<std::string> frames(int batch, int64_t from, int64_t count, bool msgpack) {
  std::vector<std::string> out;
  for (int64_t n = from; n < from + count; n += batch) {
    if (batch == 1) {
      out.push_back(wire(msg_frame(n), msgpack));
      continue;
    }
    std::string s = "[";
    for (int k = 0; k < batch; k++) {
      if (k) s += ",";
      s += msg_frame(n + k);
    }
    out.push_back(wire(s + "]", msgpack));
  }
  return out;
}

// A client joined to chat:bench at seq 0 on the replay transport.
struct Session {
  std::shared_ptr<ReplayTransport> t = std::make_shared<ReplayTransport>();
  std::unique_ptr<parley::Client> client;
  int64_t count = 0, last_seq = 0, sum = 0;

  explicit Session(bool msgpack) {
    parley::ClientOptions o;
    o.url = "ws://bench/v1/ws";
    o.token = "t";
    o.transport = t;
    if (msgpack) o.codec = parley::msgpack_codec();
    client = std::make_unique<parley::Client>(std::move(o));
    parley::Channel ch = client->channel("chat:bench");
    ch.on_msg([this](const parley::Message& m) {
      count++;
      last_seq = m.seq;
      auto it = m.body.find("i");
      if (it != m.body.end() && it->is_number_integer()) sum += it->get<int64_t>();
    });
    ch.join();
    const std::string welcome =
        wire(R"({"op":"welcome","rid":1,"conn":"c1","user":"u1","tenant":"demo","heartbeat_ms":25000})", msgpack);
    const std::string joined = wire(R"({"op":"joined","rid":2,"ch":"chat:bench","seq":0,"recovered":false})", msgpack);
    client->poll();  // open: hello (rid 1)
    t->next = &welcome;
    client->poll();  // welcome: join (rid 2)
    t->next = &joined;
    client->poll();
  }
  void feed(const std::vector<std::string>& fs) {
    for (const std::string& f : fs) {
      t->next = &f;
      client->poll();
    }
  }
};

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

struct Runs {
  std::vector<double> wall;
  std::vector<double> cpu;
};
std::map<std::pair<int, int>, Runs> g_runs;  // (msgpack, batch)

void BM_Receive(benchmark::State& state) {
  const int batch = static_cast<int>(state.range(0));
  const bool msgpack = state.range(1) != 0;
  const auto warm = frames(batch, 1, kWarmup, msgpack);
  const auto timed = frames(batch, 1 + kWarmup, kTimed, msgpack);
  const int64_t last = kWarmup + kTimed;
  const int64_t want_sum = last * (last + 1) / 2;
  for (auto _ : state) {
    Session s(msgpack);
    s.feed(warm);
    const auto t0 = std::chrono::steady_clock::now();
    const double c0 = thread_cpu_seconds();
    s.feed(timed);
    const double cpu = thread_cpu_seconds() - c0;
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    state.SetIterationTime(wall);
    if (s.count != last || s.last_seq != last || s.sum != want_sum) {
      state.SkipWithError("a run did not deliver every message once, in order");
      return;
    }
    g_runs[{msgpack, batch}].wall.push_back(kTimed / wall);
    g_runs[{msgpack, batch}].cpu.push_back(kTimed / cpu);
  }
  state.SetItemsProcessed(state.iterations() * kTimed);
}
BENCHMARK(BM_Receive)->ArgNames({"batch", "msgpack"})->ArgsProduct({{1, 16}, {0, 1}})->Iterations(1)->Repetitions(5)->UseManualTime()
    ->Unit(benchmark::kMillisecond)->ReportAggregatesOnly(false);

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

std::string list(const std::vector<double>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); i++) s += (i ? "," : "") + std::to_string(static_cast<int64_t>(v[i]));
  return s + "]";
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  for (auto& [key, r] : g_runs) {
    const auto& [msgpack, batch] = key;
    std::printf(
        "{\"sdk\":\"cpp\",\"runtime\":\"%s %s, gcc %d.%d\",\"enc\":\"%s\",\"batch\":%d,\"msgs\":%lld,"
        "\"msgs_per_sec\":%lld,\"runs\":%s,\"msgs_per_cpu_sec\":%lld,\"cpu_runs\":%s}\n",
        "parley-cpp", parley::kVersion, __GNUC__, __GNUC_MINOR__, msgpack ? "msgpack" : "json", batch, static_cast<long long>(kTimed),
        static_cast<long long>(median(r.wall)), list(r.wall).c_str(), static_cast<long long>(median(r.cpu)),
        list(r.cpu).c_str());
  }
  return 0;
}
