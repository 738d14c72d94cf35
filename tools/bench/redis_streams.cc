#include "redis_streams.h"

#include <hiredis/hiredis.h>
#include <poll.h>
#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <deque>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "event_shape.h"
#include "events_ledger.h"
#include "procstat.h"
#include "server_process.h"

namespace bench {

namespace {

using Clock = std::chrono::steady_clock;

struct Ctx {
  redisContext* c = nullptr;
  explicit Ctx(int port) {
    timeval tv{5, 0};
    c = redisConnectWithTimeout("127.0.0.1", port, tv);
    if (!c || c->err) throw std::runtime_error(fmt::format("redis connect: {}", c ? c->errstr : "oom"));
    redisSetTimeout(c, tv);
  }
  ~Ctx() { redisFree(c); }
  Ctx(const Ctx&) = delete;
  Ctx& operator=(const Ctx&) = delete;
  // Writes everything appended so far.
  bool flush() {
    int done = 0;
    while (!done) {
      if (redisBufferWrite(c, &done) != REDIS_OK) return false;
    }
    return true;
  }
  // The next reply, blocking (up to the socket timeout); nullptr on error.
  redisReply* next() {
    void* r = nullptr;
    if (redisGetReply(c, &r) != REDIS_OK) return nullptr;
    return static_cast<redisReply*>(r);
  }
  // A reply already received or readable within `ms`; nullptr if none.
  redisReply* poll_next(int ms) {
    void* r = nullptr;
    if (redisGetReplyFromReader(c, &r) == REDIS_OK && r) return static_cast<redisReply*>(r);
    pollfd p{c->fd, POLLIN, 0};
    if (::poll(&p, 1, ms) <= 0) return nullptr;
    if (redisBufferRead(c) != REDIS_OK) return nullptr;
    if (redisGetReplyFromReader(c, &r) == REDIS_OK && r) return static_cast<redisReply*>(r);
    return nullptr;
  }
};

struct Reply {
  redisReply* r;
  explicit Reply(redisReply* r) : r(r) {}
  ~Reply() {
    if (r) freeReplyObject(r);
  }
};

struct Shared {
  std::mutex mu;
  OffsetSet acked;  // (producer, n)
  BoardTally tally;
  uint64_t errors = 0;
  double producer_cpu_s = 0;
};

std::string stream_of(const Options& o, uint32_t p) { return fmt::format("{}:{}", o.topic, p); }

void produce(const Options& o, int port, int index, uint32_t partitions, int64_t t0,
             std::atomic<bool>& stop, Shared& shared, std::atomic<uint64_t>& sent) {
  Ctx ctx(port);
  const double per_s = o.rate / o.conns;
  const int batch = std::max(1, o.events_batch);
  struct Batch {
    uint64_t first_n = 0;
    std::string round;
    std::vector<uint32_t> keys;
  };
  std::deque<Batch> inflight;
  size_t answered_in_front = 0;  // replies of inflight.front() read so far
  uint64_t front_ok = 0;
  std::vector<uint8_t> front_good;
  auto take = [&](redisReply* r) {
    Reply hold(r);
    Batch& b = inflight.front();
    if (front_good.size() != b.keys.size()) front_good.assign(b.keys.size(), 0);
    front_good[answered_in_front] = r->type != REDIS_REPLY_ERROR;
    ++answered_in_front;
    if (answered_in_front == b.keys.size()) {
      std::lock_guard lock(shared.mu);
      for (size_t i = 0; i < b.keys.size(); ++i) {
        const uint64_t n = b.first_n + i;
        if (!front_good[i]) {
          ++shared.errors;
          continue;
        }
        shared.acked.add(static_cast<uint32_t>(index), n);
        shared.tally.add(b.round, fmt::format("player-{}", b.keys[i]), event_points(n));
      }
      inflight.pop_front();
      answered_in_front = 0;
      front_good.clear();
    }
    (void)front_ok;
  };
  const auto start = Clock::now();
  uint64_t n = 0;
  std::string body, key, id;
  while (!stop) {
    const auto due = start + std::chrono::nanoseconds(static_cast<int64_t>(double(n) * 1e9 / per_s));
    const auto now = Clock::now();
    if (now < due || inflight.size() >= 16) {
      // Read what has come while waiting for the next batch's time.
      const int ms = inflight.size() >= 16
                         ? 5
                         : static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(due - now).count());
      if (inflight.empty()) {
        std::this_thread::sleep_until(due);
        continue;
      }
      if (redisReply* r = ctx.poll_next(std::max(ms, 0))) {
        take(r);
        while (!inflight.empty()) {
          void* more = nullptr;
          if (redisGetReplyFromReader(ctx.c, &more) != REDIS_OK || !more) break;
          take(static_cast<redisReply*>(more));
        }
      }
      continue;
    }
    const int64_t t = mono_ns();
    Batch b;
    b.first_n = n;
    b.round = fmt::format("{}-{}", o.run_id, static_cast<int64_t>(double(t - t0) / 1e9 / o.round_s));
    for (int i = 0; i < batch; ++i, ++n) {
      const uint32_t k = event_key(n, index, o.keys);
      b.keys.push_back(k);
      key = fmt::format("player-{}", k);
      id = fmt::format("g{}-{}", index, n);
      body.clear();
      append_body(body, k, event_points(n), b.round, t);
      const std::string stream = stream_of(o, partition_of(key, partitions));
      redisAppendCommand(ctx.c, "XADD %b * key %b type score id %b body %b", stream.data(), stream.size(),
                         key.data(), key.size(), id.data(), id.size(), body.data(), body.size());
    }
    inflight.push_back(std::move(b));
    if (!ctx.flush()) break;
    sent += static_cast<uint64_t>(batch);
  }
  const auto until = Clock::now() + std::chrono::duration<double>(o.drain_s);
  while (!inflight.empty() && Clock::now() < until) {
    if (redisReply* r = ctx.poll_next(50)) take(r);
  }
  std::lock_guard lock(shared.mu);
  shared.producer_cpu_s += thread_cpu_s();
}

// "ms-seq" as a comparable pair.
std::pair<uint64_t, uint64_t> id_of(const char* s) {
  char* end = nullptr;
  const uint64_t ms = std::strtoull(s, &end, 10);
  const uint64_t seq = *end == '-' ? std::strtoull(end + 1, nullptr, 10) : 0;
  return {ms, seq};
}

// One group's worker: a round trip per loop carrying the previous read's XACKs,
// the leaderboard's ZINCRBYs (when `board`) and the next blocking XREADGROUP.
void consume(const Options& o, int port, int g, uint32_t partitions, bool board,
             std::atomic<bool>& stop, GroupAudit& audit) {
  Ctx ctx(port);
  const std::string group = fmt::format("bench-g{}", g);
  std::vector<std::string> streams;
  for (uint32_t p = 0; p < partitions; ++p) streams.push_back(stream_of(o, p));
  std::vector<std::vector<std::string>> acks(partitions);
  std::map<std::pair<std::string, std::string>, double> incr;  // (round, member) -> points
  std::vector<std::pair<uint64_t, uint64_t>> last(partitions, {0, 0});
  std::vector<const char*> argv;
  std::vector<size_t> lens;
  auto append = [&](const std::vector<std::string>& args) {
    argv.clear();
    lens.clear();
    for (const auto& a : args) {
      argv.push_back(a.data());
      lens.push_back(a.size());
    }
    redisAppendCommandArgv(ctx.c, static_cast<int>(argv.size()), argv.data(), lens.data());
  };
  std::vector<std::string> read_cmd = {"XREADGROUP", "GROUP", group, "w0", "COUNT", "1000", "BLOCK", "100", "STREAMS"};
  for (const auto& s : streams) read_cmd.push_back(s);
  for (uint32_t p = 0; p < partitions; ++p) read_cmd.push_back(">");
  std::vector<std::string> args;
  bool idle = false;
  while (!(stop && idle)) {
    size_t replies = 0;
    for (uint32_t p = 0; p < partitions; ++p) {
      if (acks[p].empty()) continue;
      args = {"XACK", streams[p], group};
      for (auto& id : acks[p]) args.push_back(std::move(id));
      acks[p].clear();
      append(args);
      ++replies;
    }
    for (const auto& [rm, pts] : incr) {
      append({"ZINCRBY", fmt::format("lb:{}:{}", o.board.empty() ? o.topic : o.board, rm.first),
              fmt::format("{}", pts), rm.second});
      ++replies;
    }
    incr.clear();
    append(read_cmd);
    if (!ctx.flush()) break;
    for (size_t i = 0; i < replies; ++i) {
      Reply r(ctx.next());
      if (!r.r) return;
    }
    Reply r(ctx.next());
    if (!r.r) break;
    const int64_t now = mono_ns();
    idle = r.r->type != REDIS_REPLY_ARRAY;
    if (idle) continue;
    std::lock_guard lock(audit.mu);
    for (size_t s = 0; s < r.r->elements; ++s) {
      const redisReply* st = r.r->element[s];
      if (st->type != REDIS_REPLY_ARRAY || st->elements != 2) continue;
      const uint32_t p = static_cast<uint32_t>(std::strtoul(std::strchr(st->element[0]->str, ':') + 1, nullptr, 10));
      const redisReply* entries = st->element[1];
      for (size_t e = 0; e < entries->elements; ++e) {
        const redisReply* en = entries->element[e];
        if (en->type != REDIS_REPLY_ARRAY || en->elements != 2) continue;
        const auto id = id_of(en->element[0]->str);
        if (id <= last[p]) ++audit.order_violations;
        last[p] = id;
        acks[p].emplace_back(en->element[0]->str, en->element[0]->len);
        const redisReply* fields = en->element[1];
        std::string_view eid, ebody;
        for (size_t f = 0; f + 1 < fields->elements; f += 2) {
          const std::string_view name(fields->element[f]->str, fields->element[f]->len);
          const std::string_view value(fields->element[f + 1]->str, fields->element[f + 1]->len);
          if (name == "id") eid = value;
          if (name == "body") ebody = value;
        }
        ++audit.deliveries;
        // id "g<producer>-<n>"; body {"player":..,"points":..,"round":..,"t":..}
        if (eid.size() > 1) {
          const auto dash = eid.find('-');
          const uint32_t prod = static_cast<uint32_t>(std::strtoul(std::string(eid.substr(1, dash - 1)).c_str(), nullptr, 10));
          const uint64_t n = std::strtoull(std::string(eid.substr(dash + 1)).c_str(), nullptr, 10);
          audit.got.add(prod, n);
        }
        const auto tpos = ebody.rfind("\"t\":");
        if (tpos != std::string_view::npos) {
          audit.latency.record(now - std::strtoll(std::string(ebody.substr(tpos + 4)).c_str(), nullptr, 10));
        }
        if (board) {
          // The worker's own decode of what it scores: player, points, round.
          auto field = [&](std::string_view k) {
            const auto at = ebody.find(k);
            if (at == std::string_view::npos) return std::string_view{};
            auto v = ebody.substr(at + k.size());
            const bool quoted = !v.empty() && v[0] == '"';
            if (quoted) v.remove_prefix(1);
            return v.substr(0, v.find_first_of(quoted ? "\"" : ",}"));
          };
          incr[{std::string(field("\"round\":")), std::string(field("\"player\":"))}] +=
              std::strtod(std::string(field("\"points\":")).c_str(), nullptr);
        }
      }
    }
  }
  std::lock_guard lock(audit.mu);
  audit.cpu_s += thread_cpu_s();
}

// Every interval the top 10 of the current round, published (what a studio's
// pusher does beside the worker).
void push_boards(const Options& o, int port, int64_t t0, std::atomic<bool>& stop, double& cpu_s) {
  Ctx ctx(port);
  const std::string board = o.board.empty() ? o.topic : o.board;
  while (!stop) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    const std::string round = fmt::format("{}-{}", o.run_id, static_cast<int64_t>(double(mono_ns() - t0) / 1e9 / o.round_s));
    const std::string key = fmt::format("lb:{}:{}", board, round);
    Reply top(static_cast<redisReply*>(redisCommand(ctx.c, "ZREVRANGE %s 0 9 WITHSCORES", key.c_str())));
    if (!top.r || top.r->type != REDIS_REPLY_ARRAY) continue;
    std::string msg = "[";
    for (size_t i = 0; i + 1 < top.r->elements; i += 2) {
      if (i) msg += ',';
      msg += fmt::format(R"({{"m":"{}","s":{},"r":{}}})", top.r->element[i]->str, top.r->element[i + 1]->str, i / 2 + 1);
    }
    msg += "]";
    Reply pub(static_cast<redisReply*>(redisCommand(ctx.c, "PUBLISH %s %b", key.c_str(), msg.data(), msg.size())));
  }
  cpu_s = thread_cpu_s();
}

}  // namespace

PipelineFigures run_redis_streams(const Options& o, uint32_t partitions) {
  PipelineFigures f;
  f.name = "redis-streams";
  const int port = free_port();
  char tmpl[] = "/tmp/parley-bench-redis-XXXXXX";
  if (!::mkdtemp(tmpl)) {
    f.error = "mkdtemp failed";
    return f;
  }
  const std::string dir = tmpl;
  ServerProcess redis;
  if (!redis.start({o.redis_bin, "--port", std::to_string(port), "--bind", "127.0.0.1", "--dir", dir, "--save",
                    "", "--appendonly", "yes", "--appendfsync", "everysec", "--daemonize", "no"},
                   dir + "/redis.log", port, 10)) {
    f.error = "cannot start " + o.redis_bin;
    return f;
  }
  fmt::print("  redis-server pid {} on 127.0.0.1:{} (appendonly yes, appendfsync everysec), dir {}\n", redis.pid(),
             port, dir);
  try {
    Ctx admin(port);
    for (int g = 0; g < o.groups; ++g) {
      for (uint32_t p = 0; p < partitions; ++p) {
        Reply r(static_cast<redisReply*>(redisCommand(admin.c, "XGROUP CREATE %s bench-g%d $ MKSTREAM",
                                                        stream_of(o, p).c_str(), g)));
      }
    }
    Shared shared;
    GroupAudits groups;
    std::atomic<bool> stop_producers{false}, stop_consumers{false};
    std::atomic<uint64_t> sent{0};
    std::vector<std::thread> producers, consumers;
    for (int g = 0; g < o.groups; ++g) {
      groups.push_back(std::make_unique<GroupAudit>());
      consumers.emplace_back([&, g] {
        try {
          consume(o, port, g, partitions, g == 0, stop_consumers, *groups[g]);
        } catch (const std::exception& e) {
          fmt::print(stderr, "redis worker {}: {}\n", g, e.what());
        }
      });
    }
    const int64_t t0 = mono_ns();
    double pusher_cpu = 0;
    std::thread pusher([&] {
      try {
        push_boards(o, port, t0, stop_consumers, pusher_cpu);
      } catch (const std::exception&) {
      }
    });
    const ProcStat s0 = read_proc(redis.pid());
    const auto start = Clock::now();
    for (int i = 0; i < o.conns; ++i) {
      producers.emplace_back([&, i] {
        try {
          produce(o, port, i, partitions, t0, stop_producers, shared, sent);
        } catch (const std::exception& e) {
          fmt::print(stderr, "redis producer {}: {}\n", i, e.what());
        }
      });
    }
    const uint64_t peak = sample_load(o, redis.pid(), [&](int s) {
      std::lock_guard lock(shared.mu);
      fmt::print(stderr, "redis t={}s sent={} acked={}\n", s, sent.load(), shared.acked.distinct());
    });
    stop_producers = true;
    for (auto& t : producers) t.join();
    f.load_s = std::chrono::duration<double>(Clock::now() - start).count();
    const ProcStat s1 = read_proc(redis.pid());
    wait_received(o, shared.acked, groups);
    stop_consumers = true;
    for (auto& t : consumers) t.join();
    pusher.join();
    f.ran = true;
    f.sent = sent.load();
    f.acked = shared.acked.distinct();
    f.errors = shared.errors;
    f.server_cpu_s = s1.cpu_s - s0.cpu_s;
    f.server_peak_rss = std::max(peak, s1.rss);
    f.producer_cpu_s = shared.producer_cpu_s;
    f.worker_cpu_s = pusher_cpu;
    add_groups(f, shared.acked, groups, [](size_t g, const GroupAudit& a, uint64_t missing) {
      fmt::print(
          "  redis group {}: received {} distinct, {} deliveries, missing {}, order violations {}; "
          "emit->receive p50 {:.2f} ms p99 {:.2f} ms max {:.2f} ms; worker cpu {:.2f} s\n",
          g, a.got.distinct(), a.deliveries, missing, a.order_violations, a.latency.percentile(50) / 1e6,
          a.latency.percentile(99) / 1e6, double(a.latency.max()) / 1e6, a.cpu_s);
    });
    // The worker's board against the recomputation (scores; ZSET ranks break
    // ties differently from PROTOCOL.md's, so only scores are compared).
    uint64_t checked = 0, wrong = 0;
    for (const auto& [round, members] : shared.tally.rounds) {
      const std::string key = fmt::format("lb:{}:{}", o.board.empty() ? o.topic : o.board, round);
      Reply all(static_cast<redisReply*>(redisCommand(admin.c, "ZRANGE %s 0 -1 WITHSCORES", key.c_str())));
      std::unordered_map<std::string, double> got;
      if (all.r && all.r->type == REDIS_REPLY_ARRAY) {
        for (size_t i = 0; i + 1 < all.r->elements; i += 2) {
          got[all.r->element[i]->str] = std::strtod(all.r->element[i + 1]->str, nullptr);
        }
      }
      for (const auto& [m, s] : members) {
        ++checked;
        auto it = got.find(m);
        if (it == got.end() || it->second != s) ++wrong;
      }
    }
    fmt::print("  redis leaderboard (group 0's worker, ZINCRBY per member per read): {} members checked, {} wrong; "
               "redis-server cpu {:.2f} s, peak rss {:.1f} MiB, acked {} ({:.0f}/s), XADD errors {}\n",
               checked, wrong, f.server_cpu_s, double(f.server_peak_rss) / (1 << 20), f.acked,
               double(f.acked) / f.load_s, f.errors);
    if (wrong) f.errors += wrong;
  } catch (const std::exception& e) {
    f.error = e.what();
  }
  redis.stop();
  std::filesystem::remove_all(dir);
  return f;
}

}  // namespace bench
