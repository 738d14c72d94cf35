// The C++ SDK's conformance driver (sdk/conformance/DRIVER.md): reads one
// JSON command per line on stdin, drives a parley::Client through its public
// API only, and prints what the application saw, one JSON event per line.
//
// Threads: a reader thread only moves stdin lines into a queue; the main
// thread owns the client, polls it and writes stdout.
#include <parley/client.h>
#include <parley/default_transport.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <deque>
#include <iostream>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>

namespace {

using parley::Json;

// Only the main thread writes stdout, one whole line per write.
void emit(const Json& ev) {
  std::string line = ev.dump(-1, ' ', false, Json::error_handler_t::replace);
  line += '\n';
  std::fwrite(line.data(), 1, line.size(), stdout);
  std::fflush(stdout);
}

class Lines {
 public:
  void start() {
    std::thread([this] {
      std::string line;
      while (std::getline(std::cin, line)) {
        std::lock_guard<std::mutex> lock(mu_);
        lines_.push_back(std::move(line));
      }
      eof_ = true;
    }).detach();
  }
  bool pop(std::string& out) {
    std::lock_guard<std::mutex> lock(mu_);
    if (lines_.empty()) return false;
    out = std::move(lines_.front());
    lines_.pop_front();
    return true;
  }
  bool eof() {
    std::lock_guard<std::mutex> lock(mu_);
    return eof_ && lines_.empty();
  }

 private:
  std::mutex mu_;
  std::deque<std::string> lines_;
  std::atomic<bool> eof_{false};
};

int64_t num(const Json& o, const char* k, int64_t fallback) {
  auto it = o.find(k);
  return it != o.end() && it->is_number() ? it->get<int64_t>() : fallback;
}

std::string str(const Json& o, const char* k) {
  auto it = o.find(k);
  return it != o.end() && it->is_string() ? it->get<std::string>() : std::string();
}

class Driver {
 public:
  void handle(const Json& cmd) {
    const std::string c = str(cmd, "cmd");
    if (c == "connect") return connect(cmd);
    if (c == "token") {
      token_ = str(cmd, "token");
      return;
    }
    if (c == "exit") {
      if (client_) client_->close();
      done_ = true;
      return;
    }
    if (!client_) return emit({{"ev", "error"}, {"code", "not_connected"}, {"msg", "connect first"}, {"cmd", c}});
    const std::string ch = str(cmd, "ch");
    if (c == "join") {
      auto channel = wire(ch);
      std::optional<int64_t> since;
      if (cmd.contains("since") && cmd["since"].is_number_integer()) since = cmd["since"].get<int64_t>();
      channel.join(nullptr, since);
    } else if (c == "leave") {
      client_->channel(ch).leave();
    } else if (c == "publish") {
      publish(ch, cmd);
    } else if (c == "state") {
      wire(ch).set_state(str(cmd, "key"), cmd.value("body", Json()));
    } else if (c == "up") {
      wire(ch).up(cmd.value("body", Json()));
    } else if (c == "close") {
      client_->close();
    } else {
      emit({{"ev", "error"}, {"code", "unknown_cmd"}, {"cmd", cmd.value("cmd", Json())}});
    }
  }

  void poll(std::chrono::milliseconds wait) {
    if (client_) client_->poll(wait);
    else std::this_thread::sleep_for(wait);
  }
  bool done() const { return done_; }
  // Lets the close handshake finish before the process goes, so the peer
  // sees a clean close rather than a reset in the middle of one.
  void close() {
    if (!client_) return;
    client_->close();
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(300);
    while (std::chrono::steady_clock::now() < until) client_->poll(std::chrono::milliseconds(10));
  }

 private:
  void connect(const Json& cmd) {
    const std::string enc = str(cmd, "enc");
    if (!enc.empty() && enc != "json" && enc != "msgpack") {
      return emit({{"ev", "error"}, {"code", "unsupported"}, {"msg", "enc is json or msgpack, not " + enc}});
    }
    if (client_) client_->close();
    token_ = str(cmd, "token");
    parley::ClientOptions o;
    o.url = str(cmd, "url");
    o.token_provider = [this] { return token_; };
    parley::DefaultTransportOptions tls;
    tls.tls_ca_file = str(cmd, "caFile");  // wss: the harness's certificate
    o.transport = parley::make_default_transport(tls);
    if (cmd.contains("reconnect") && cmd["reconnect"].is_object()) {
      const Json& r = cmd["reconnect"];
      o.reconnect.min_ms = num(r, "minMs", o.reconnect.min_ms);
      o.reconnect.max_ms = num(r, "maxMs", o.reconnect.max_ms);
      if (r.contains("factor") && r["factor"].is_number()) o.reconnect.factor = r["factor"].get<double>();
    }
    o.heartbeat_ms = num(cmd, "heartbeatMs", 0);
    if (enc == "msgpack") o.codec = parley::msgpack_codec();
    if (auto d = cmd.find("deltas"); d != cmd.end() && d->is_boolean()) o.state_deltas = d->get<bool>();
    client_ = std::make_unique<parley::Client>(std::move(o));
    wired_.clear();
    opens_ = 0;
    auto* cl = client_.get();
    cl->on_open([this](const parley::Welcome& w) {
      emit({{"ev", "open"}, {"conn_id", w.conn}, {"reconnect", opens_++ > 0}, {"enc", w.enc}, {"deltas", w.state_deltas}});
    });
    cl->on_disconnect([](const parley::Disconnect& d) {
      emit({{"ev", "disconnect"}, {"code", d.code}, {"reason", d.reason}, {"willReconnect", d.will_reconnect},
            {"delayMs", d.delay_ms}});
    });
    cl->on_bye([](const parley::Bye& b) {
      Json ev = {{"ev", "bye"}, {"code", b.code}};
      ev["reconnectMs"] = b.reconnect_ms >= 0 ? Json(b.reconnect_ms) : Json();
      emit(ev);
    });
    cl->on_retry([](const parley::Retry& r) {
      emit({{"ev", "retry"}, {"op", r.op}, {"ch", r.ch}, {"code", r.code}, {"retryMs", r.retry_ms}});
    });
    cl->on_direct([](const parley::Direct& d) { emit({{"ev", "direct"}, {"from", d.from}, {"body", d.body}}); });
    cl->on_error([](const parley::Error& e) {
      emit({{"ev", "error"}, {"ch", nullptr}, {"code", e.code}, {"msg", e.message}});
    });
    cl->on_closed([] { emit({{"ev", "closed"}}); });
    cl->connect();
  }

  parley::Channel wire(const std::string& name) {
    parley::Channel ch = client_->channel(name);
    if (!wired_.insert(name).second) return ch;
    ch.on_msg([](const parley::Message& m) {
      emit({{"ev", "msg"}, {"ch", m.ch}, {"seq", m.seq}, {"from", m.from}, {"id", m.id}, {"body", m.body}});
    });
    ch.on_state([](const parley::State& s) {
      parley::Json e = {{"ev", "state"}, {"ch", s.ch}, {"from", s.from}, {"key", s.key}, {"body", s.body}};
      if (s.tick >= 0) e["tick"] = s.tick;
      if (s.ts >= 0) e["ts"] = s.ts;
      emit(e);
    });
    ch.on_presence([](const parley::Presence& p) {
      emit({{"ev", "presence"}, {"ch", p.ch}, {"join", p.join}, {"leave", p.leave}});
    });
    ch.on_joined([](const parley::Joined& j) {
      emit({{"ev", "joined"}, {"ch", j.ch}, {"seq", j.seq}, {"recovered", j.recovered}, {"epoch", j.epoch},
            {"members", j.members}});
    });
    ch.on_gap([](const parley::Gap& g) { emit({{"ev", "gap"}, {"ch", g.ch}, {"from", g.from}, {"to", g.to}}); });
    ch.on_reset([](const parley::Reset& r) {
      emit({{"ev", "reset"}, {"ch", r.ch}, {"lastSeq", r.last_seq}, {"seq", r.seq}});
    });
    ch.on_error([name](const parley::Error& e) {
      emit({{"ev", "error"}, {"ch", name}, {"code", e.code}, {"msg", e.message}});
    });
    return ch;
  }

  void publish(const std::string& name, const Json& cmd) {
    auto ch = wire(name);
    const int64_t n = num(cmd, "n", 1);
    const int64_t start = num(cmd, "start", 0);
    const int64_t pad = num(cmd, "pad", 0);
    const std::string padding(static_cast<std::size_t>(std::max<int64_t>(0, pad)), 'x');
    for (int64_t k = 0; k < n; k++) {
      const int64_t i = start + k;
      Json body = cmd.contains("body") && cmd["body"].is_object() ? cmd["body"] : Json::object();
      body["i"] = i;
      if (cmd.contains("tag")) body["tag"] = cmd["tag"];
      if (pad > 0) body["pad"] = padding;
      ch.publish(std::move(body), [name, i](const parley::Result<parley::Ack>& r) {
        if (r.ok()) {
          emit({{"ev", "published"}, {"ch", name}, {"i", i}, {"id", r.value().id}, {"seq", r.value().seq},
                {"dup", r.value().dup}});
        } else {
          emit({{"ev", "publish_failed"}, {"ch", name}, {"i", i}, {"code", r.error().code}});
        }
      });
    }
  }

  std::unique_ptr<parley::Client> client_;
  std::string token_;
  std::set<std::string> wired_;
  int opens_ = 0;
  bool done_ = false;
};

}  // namespace

int main() {
  // std::cin is tied to std::cout: every read on the reader thread would
  // flush cout from there, racing the main thread's writes (lines came out twice).
  std::cin.tie(nullptr);
  Lines lines;
  lines.start();
  emit({{"ev", "ready"}, {"sdk", "cpp"}, {"version", parley::kVersion}, {"features", {"state_delta"}}});
  Driver driver;
  std::string line;
  while (!driver.done()) {
    bool any = false;
    while (!driver.done() && lines.pop(line)) {
      any = true;
      Json cmd = Json::parse(line, nullptr, false);
      if (cmd.is_discarded() || !cmd.is_object()) {
        std::cerr << "driver: not a JSON object: " << line << '\n';
        continue;
      }
      driver.handle(cmd);
    }
    if (driver.done()) break;
    if (lines.eof()) break;
    driver.poll(std::chrono::milliseconds(any ? 0 : 5));
  }
  driver.close();
  return 0;
}
