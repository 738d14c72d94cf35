// fanout-transport (issue 10): sharded pub/sub against stream tailing as the
// cross-node feed of the valkey store, measured on redis directly, without Parley.
//
//   fanout-transport write --nodes H:P,.. [--publish 1|0] [--rate 6000] [--channels 1000]
//                          [--partitions 64] [--secs 30] [--body 80]
//   fanout-transport read  --nodes H:P,.. --mode pubsub|tail|poll [--follow 64]
//                          [--partitions 64] [--secs 30] [--poll-ms 2]
//
// The writer is node A: the store's own append script (store/valkey/scripts.cc,
// the keys of partition_map.cc, the arguments of ValkeyStore::append with seq 0)
// into `--channels` channels ("c0".."cN" of tenant demo) round robin at `--rate`
// per second. With --publish 0 it runs the same script with its SPUBLISH removed
// (the stream part only). The body carries the send time (CLOCK_MONOTONIC ns).
//
// The reader is node B, following partitions 0..follow-1:
//   pubsub: one connection per master, SSUBSCRIBE {demo.pK}:f per partition;
//   tail:   one connection per partition, XREAD COUNT 512 BLOCK 0 on {demo.pK}:w
//           (a cluster refuses one XREAD over streams of several slots: CROSSSLOT);
//   poll:   one connection per master, every poll-ms a pipelined non-blocking
//           XREAD COUNT 512 per partition of that master, the last id per stream.
// One thread, poll(2) over non-blocking hiredis contexts (an event loop as the
// server has). Prints one line of key=value: messages, latencies (send ->
// received, and for the writer send -> script answered), CPU seconds.
//
// Single-threaded; blocking only in poll(2).
#include <hiredis/hiredis.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "store/valkey/partition_map.h"
#include "store/valkey/scripts.h"

namespace {

using parley::store::ChannelId;
namespace vk = parley::store::valkey;

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

double cpu_s() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

[[noreturn]] void die(const std::string& why) {
  std::fprintf(stderr, "fanout-transport: %s\n", why.c_str());
  std::exit(2);
}

struct Opts {
  std::string role, mode = "pubsub";
  std::vector<std::pair<std::string, int>> nodes;
  bool publish = true;
  double rate = 6000;
  uint32_t channels = 1000, partitions = 64, follow = 64, body = 80;
  double secs = 30, poll_ms = 2;
};

Opts parse(int argc, char** argv) {
  if (argc < 2) die("usage: fanout-transport write|read --nodes H:P,.. [options] (see the source)");
  Opts o;
  o.role = argv[1];
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--nodes") {
      size_t s = 0;
      while (s < v.size()) {
        size_t e = v.find(',', s);
        if (e == std::string::npos) e = v.size();
        const std::string hp = v.substr(s, e - s);
        const size_t c = hp.rfind(':');
        if (c == std::string::npos) die("bad node " + hp);
        o.nodes.emplace_back(hp.substr(0, c), std::atoi(hp.c_str() + c + 1));
        s = e + 1;
      }
    } else if (k == "--mode") {
      o.mode = v;
    } else if (k == "--publish") {
      o.publish = v != "0";
    } else if (k == "--rate") {
      o.rate = std::atof(v.c_str());
    } else if (k == "--channels") {
      o.channels = std::atoi(v.c_str());
    } else if (k == "--partitions") {
      o.partitions = std::atoi(v.c_str());
    } else if (k == "--follow") {
      o.follow = std::atoi(v.c_str());
    } else if (k == "--secs") {
      o.secs = std::atof(v.c_str());
    } else if (k == "--poll-ms") {
      o.poll_ms = std::atof(v.c_str());
    } else if (k == "--body") {
      o.body = std::atoi(v.c_str());
    } else {
      die("unknown option " + k);
    }
  }
  if (o.nodes.empty()) die("--nodes is required");
  if (o.follow > o.partitions) o.follow = o.partitions;
  return o;
}

redisContext* connect(const std::string& host, int port) {
  redisContext* c = redisConnect(host.c_str(), port);
  if (c == nullptr || c->err) die("connect " + host + ":" + std::to_string(port));
  return c;
}

// Which master serves each partition's tag: CLUSTER SLOTS of the first node, or
// the first node for all when it is not a cluster.
std::vector<size_t> master_of_partitions(const Opts& o, std::vector<std::pair<std::string, int>>& masters) {
  redisContext* c = connect(o.nodes[0].first, o.nodes[0].second);
  auto* r = static_cast<redisReply*>(redisCommand(c, "CLUSTER SLOTS"));
  std::vector<std::pair<int, int>> ranges;  // slot range -> master index, by ranges[i]
  std::vector<size_t> range_master;
  if (r != nullptr && r->type == REDIS_REPLY_ARRAY) {
    for (size_t i = 0; i < r->elements; ++i) {
      const redisReply* e = r->element[i];
      const redisReply* m = e->element[2];
      const std::pair<std::string, int> hp{m->element[0]->str, static_cast<int>(m->element[1]->integer)};
      auto it = std::find(masters.begin(), masters.end(), hp);
      if (it == masters.end()) it = masters.insert(masters.end(), hp);
      ranges.emplace_back(static_cast<int>(e->element[0]->integer), static_cast<int>(e->element[1]->integer));
      range_master.push_back(static_cast<size_t>(it - masters.begin()));
    }
  }
  if (r != nullptr) freeReplyObject(r);
  redisFree(c);
  std::vector<size_t> out(o.partitions, 0);
  if (masters.empty()) {
    masters.push_back(o.nodes[0]);
    return out;
  }
  for (uint32_t p = 0; p < o.partitions; ++p) {
    const int slot = vk::key_slot(vk::hash_tag("demo", p));
    for (size_t i = 0; i < ranges.size(); ++i) {
      if (slot >= ranges[i].first && slot <= ranges[i].second) out[p] = range_master[i];
    }
  }
  return out;
}

struct Hist {
  std::vector<int64_t> v;
  void add(int64_t ns) { v.push_back(ns); }
  double q_ms(double q) {
    if (v.empty()) return 0;
    const size_t i = std::min(v.size() - 1, static_cast<size_t>(q * v.size()));
    std::nth_element(v.begin(), v.begin() + i, v.end());
    return v[i] / 1e6;
  }
};

// The append script without its SPUBLISH block: the stream part alone.
std::string stream_only(std::string src) {
  const size_t a = src.find("if ARGV[11] ~= '' then\n  -- Several nodes");
  const size_t s = src.find("SPUBLISH", a);
  const size_t e = src.find("\nend\n", s);
  if (a == std::string::npos || s == std::string::npos || e == std::string::npos) {
    die("the append script changed: no SPUBLISH block to remove");
  }
  src.erase(a, e + 5 - a);
  return src;
}

int write(const Opts& o) {
  std::vector<std::pair<std::string, int>> masters;
  const std::vector<size_t> where = master_of_partitions(o, masters);
  const std::string script = o.publish ? vk::append_script().source : stream_only(vk::append_script().source);
  std::vector<redisContext*> conns;
  std::string sha;
  for (const auto& [h, p] : masters) {
    conns.push_back(connect(h, p));
    auto* r = static_cast<redisReply*>(redisCommand(conns.back(), "SCRIPT LOAD %b", script.data(), script.size()));
    if (r == nullptr || r->type != REDIS_REPLY_STRING) die("SCRIPT LOAD failed");
    sha = r->str;
    freeReplyObject(r);
  }
  struct Chan {
    vk::ChannelKeys k;
    std::string name;
    size_t master;
  };
  std::vector<Chan> chans;
  for (uint32_t i = 0; i < o.channels; ++i) {
    ChannelId id{"demo", "c" + std::to_string(i)};
    Chan c{vk::channel_keys(id, o.partitions), id.channel, 0};
    c.master = where[vk::partition_of(id, o.partitions)];
    chans.push_back(std::move(c));
  }
  std::vector<std::vector<int64_t>> pending(conns.size());  // send times, in order
  Hist ack;
  uint64_t sent = 0, errors = 0, dups = 0;
  const double c0 = cpu_s();
  const int64_t t0 = now_ns();
  const int64_t end = t0 + static_cast<int64_t>(o.secs * 1e9);
  const std::string pad(o.body > 40 ? o.body - 40 : 1, 'x');
  std::vector<std::string> argv_s(18);
  std::vector<const char*> argv(18);
  std::vector<size_t> lens(18);
  while (true) {
    const int64_t now = now_ns();
    if (now >= end) break;
    const uint64_t due = static_cast<uint64_t>((now - t0) / 1e9 * o.rate);
    for (; sent < due; ++sent) {
      const Chan& c = chans[sent % chans.size()];
      const int64_t ts = now_ns();
      argv_s = {"EVALSHA", sha, "5", c.k.seq, c.k.history, c.k.dedupe, c.k.dedupe_by_time, c.k.wal,
                "0", std::to_string(ts / 1000000), "u" + std::to_string(sent % 2000),
                "m" + std::to_string(sent), "{\"t\":" + std::to_string(ts) + ",\"x\":\"" + pad + "\"}",
                "1000", "125", "120000", c.name, "100000", c.k.feed};
      for (size_t i = 0; i < argv_s.size(); ++i) {
        argv[i] = argv_s[i].data();
        lens[i] = argv_s[i].size();
      }
      redisAppendCommandArgv(conns[c.master], static_cast<int>(argv_s.size()), argv.data(), lens.data());
      pending[c.master].push_back(ts);
    }
    for (size_t m = 0; m < conns.size(); ++m) {
      for (int64_t ts : pending[m]) {
        void* rv = nullptr;
        if (redisGetReply(conns[m], &rv) != REDIS_OK) die("connection lost");
        auto* r = static_cast<redisReply*>(rv);
        ack.add(now_ns() - ts);
        if (r->type != REDIS_REPLY_ARRAY) {
          if (++errors < 5) std::fprintf(stderr, "append: %s\n", r->type == REDIS_REPLY_ERROR ? r->str : "?");
        } else if (r->element[1]->integer == 1) {
          ++dups;
        }
        freeReplyObject(r);
      }
      pending[m].clear();
    }
    std::this_thread::sleep_for(std::chrono::microseconds(500));
  }
  const double cpu = cpu_s() - c0;
  std::printf("role=write publish=%d sent=%llu errors=%llu dups=%llu secs=%.1f ack_p50_ms=%.3f ack_p99_ms=%.3f cpu_s=%.2f\n",
              o.publish ? 1 : 0, static_cast<unsigned long long>(sent), static_cast<unsigned long long>(errors),
              static_cast<unsigned long long>(dups), (now_ns() - t0) / 1e9, ack.q_ms(0.5), ack.q_ms(0.99), cpu);
  for (auto* c : conns) redisFree(c);
  return errors == 0 ? 0 : 1;
}

// The send time the writer put in a body: the digits after {"t":.
bool sent_at(std::string_view s, int64_t& ns) {
  const size_t p = s.find("{\"t\":");
  if (p == std::string_view::npos) return false;
  ns = std::strtoll(s.data() + p + 5, nullptr, 10);
  return ns > 0;
}

struct Reader {
  const Opts& o;
  Hist lat;
  uint64_t received = 0, bad = 0, replies = 0, commands = 0;
  int64_t begin_ns = 0;

  void got(std::string_view body) {
    int64_t ns = 0;
    if (!sent_at(body, ns)) {
      ++bad;
      return;
    }
    if (ns < begin_ns) return;  // published before the reader was ready
    ++received;
    lat.add(now_ns() - ns);
  }
};

struct Conn {
  redisContext* c = nullptr;
  std::vector<uint32_t> parts;       // the partitions it reads
  std::vector<std::string> last_id;  // per part (tail / poll)
  size_t outstanding = 0;
  int64_t next_poll_ns = 0;
};

void send_cmd(Conn& c, const std::vector<std::string>& args, Reader& rd) {
  std::vector<const char*> argv;
  std::vector<size_t> lens;
  for (const auto& a : args) {
    argv.push_back(a.data());
    lens.push_back(a.size());
  }
  redisAppendCommandArgv(c.c, static_cast<int>(args.size()), argv.data(), lens.data());
  ++c.outstanding;
  ++rd.commands;
}

void xread(Conn& c, bool block, Reader& rd) {
  if (block) {
    send_cmd(c, {"XREAD", "COUNT", "512", "BLOCK", "0", "STREAMS",
                 vk::hash_tag("demo", c.parts[0]) + ":w", c.last_id[0]}, rd);
    return;
  }
  for (size_t i = 0; i < c.parts.size(); ++i) {
    send_cmd(c, {"XREAD", "COUNT", "512", "STREAMS", vk::hash_tag("demo", c.parts[i]) + ":w",
                 c.last_id[i]}, rd);
  }
}

// An XREAD reply: [[stream, [[id, [f, v, ...]], ...]], ...] or nil.
void on_xread(Conn& c, redisReply* r, Reader& rd) {
  if (r->type == REDIS_REPLY_ERROR) die(std::string("XREAD: ") + r->str);
  if (r->type != REDIS_REPLY_ARRAY) return;
  for (size_t s = 0; s < r->elements; ++s) {
    const redisReply* st = r->element[s];
    const std::string key(st->element[0]->str, st->element[0]->len);
    size_t idx = 0;
    for (size_t i = 0; i < c.parts.size(); ++i) {
      if (key == vk::hash_tag("demo", c.parts[i]) + ":w") idx = i;
    }
    const redisReply* entries = st->element[1];
    for (size_t e = 0; e < entries->elements; ++e) {
      const redisReply* en = entries->element[e];
      c.last_id[idx].assign(en->element[0]->str, en->element[0]->len);
      const redisReply* fv = en->element[1];
      for (size_t f = 0; f + 1 < fv->elements; f += 2) {
        if (fv->element[f]->len == 1 && fv->element[f]->str[0] == 'b') {
          rd.got(std::string_view(fv->element[f + 1]->str, fv->element[f + 1]->len));
        }
      }
    }
  }
}

int read(const Opts& o) {
  std::vector<std::pair<std::string, int>> masters;
  const std::vector<size_t> where = master_of_partitions(o, masters);
  Reader rd{o, {}};
  std::vector<Conn> conns;
  if (o.mode == "tail") {
    for (uint32_t p = 0; p < o.follow; ++p) {
      Conn c;
      c.c = connect(masters[where[p]].first, masters[where[p]].second);
      c.parts = {p};
      c.last_id = {"$"};
      conns.push_back(std::move(c));
    }
  } else if (o.mode == "pubsub" || o.mode == "poll") {
    for (const auto& [h, port] : masters) {
      Conn c;
      c.c = connect(h, port);
      conns.push_back(std::move(c));
    }
    for (uint32_t p = 0; p < o.follow; ++p) {
      conns[where[p]].parts.push_back(p);
      conns[where[p]].last_id.push_back("$");
    }
    if (o.mode == "poll") {
      // Ids to start from: "$" is only meaningful in a blocking XREAD.
      for (auto& c : conns) {
        for (size_t i = 0; i < c.parts.size(); ++i) {
          auto* r = static_cast<redisReply*>(redisCommand(
              c.c, "XREVRANGE %s + - COUNT 1", (vk::hash_tag("demo", c.parts[i]) + ":w").c_str()));
          c.last_id[i] = (r && r->type == REDIS_REPLY_ARRAY && r->elements == 1)
                             ? std::string(r->element[0]->element[0]->str)
                             : "0-0";
          if (r) freeReplyObject(r);
        }
      }
    }
  } else {
    die("unknown --mode " + o.mode);
  }
  std::erase_if(conns, [](const Conn& c) {
    if (c.parts.empty()) redisFree(c.c);
    return c.parts.empty();
  });
  if (o.mode == "tail" && masters.size() > 1) {
    // What one blocking connection per master would need: refused in a cluster.
    std::vector<uint32_t> same;
    for (uint32_t p = 0; p < o.follow && same.size() < 2; ++p) {
      if (where[p] == where[0]) same.push_back(p);
    }
    if (same.size() == 2) {
      auto* r = static_cast<redisReply*>(redisCommand(conns[0].c, "XREAD COUNT 1 STREAMS %s %s 0-0 0-0",
          (vk::hash_tag("demo", same[0]) + ":w").c_str(), (vk::hash_tag("demo", same[1]) + ":w").c_str()));
      std::fprintf(stderr, "one XREAD over two partitions of one master: %s\n",
                   r && r->type == REDIS_REPLY_ERROR ? r->str : "accepted");
      if (r) freeReplyObject(r);
    }
  }
  for (auto& c : conns) {
    if (o.mode == "pubsub") {
      for (uint32_t p : c.parts) send_cmd(c, {"SSUBSCRIBE", vk::hash_tag("demo", p) + ":f"}, rd);
    } else if (o.mode == "tail") {
      xread(c, true, rd);
    }
    int done = 0;
    while (redisBufferWrite(c.c, &done) == REDIS_OK && !done) {
    }
  }
  for (auto& c : conns) {
    const int fl = fcntl(c.c->fd, F_GETFL);
    fcntl(c.c->fd, F_SETFL, fl | O_NONBLOCK);
    c.c->flags &= ~REDIS_BLOCK;
  }
  rd.begin_ns = now_ns() + 200'000'000;  // after the subscriptions are in place
  const double c0 = cpu_s();
  double c_measured = c0;
  const int64_t end = rd.begin_ns + static_cast<int64_t>(o.secs * 1e9);
  std::vector<pollfd> fds(conns.size());
  bool started = false;
  while (true) {
    const int64_t now = now_ns();
    if (!started && now >= rd.begin_ns) {
      started = true;
      c_measured = cpu_s();
    }
    if (now >= end) break;
    int timeout = 100;
    if (o.mode == "poll") {
      for (auto& c : conns) {
        if (c.outstanding == 0 && now >= c.next_poll_ns) {
          xread(c, false, rd);
          int done = 0;
          while (redisBufferWrite(c.c, &done) == REDIS_OK && !done) {
          }
          c.next_poll_ns = now + static_cast<int64_t>(o.poll_ms * 1e6);
        }
      }
      timeout = std::max(1, static_cast<int>(o.poll_ms));
    }
    for (size_t i = 0; i < conns.size(); ++i) fds[i] = pollfd{conns[i].c->fd, POLLIN, 0};
    if (::poll(fds.data(), fds.size(), timeout) < 0) continue;
    for (size_t i = 0; i < conns.size(); ++i) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      Conn& c = conns[i];
      if (redisBufferRead(c.c) != REDIS_OK) die("read failed");
      void* rv = nullptr;
      bool again = false;
      while (redisGetReplyFromReader(c.c, &rv) == REDIS_OK && rv != nullptr) {
        auto* r = static_cast<redisReply*>(rv);
        ++rd.replies;
        if (o.mode == "pubsub") {
          // ["smessage", channel, payload] or ["ssubscribe", channel, n]
          if (r->type == REDIS_REPLY_ARRAY && r->elements == 3 &&
              std::string_view(r->element[0]->str, r->element[0]->len) == "smessage") {
            rd.got(std::string_view(r->element[2]->str, r->element[2]->len));
          } else if (c.outstanding > 0) {
            --c.outstanding;
          }
        } else {
          on_xread(c, r, rd);
          --c.outstanding;
          again = o.mode == "tail";
        }
        freeReplyObject(r);
        rv = nullptr;
      }
      if (again) {
        xread(c, true, rd);
        int done = 0;
        while (redisBufferWrite(c.c, &done) == REDIS_OK && !done) {
        }
      }
    }
  }
  const double cpu = cpu_s() - c_measured;
  // What the writer sent into the followed partitions while this measured.
  uint32_t followed = 0;
  for (uint32_t i = 0; i < o.channels; ++i) {
    followed += vk::partition_of(ChannelId{"demo", "c" + std::to_string(i)}, o.partitions) < o.follow;
  }
  std::printf("role=read mode=%s follow=%u followed_channels=%u expected~%.0f conns=%zu received=%llu bad=%llu commands=%llu replies=%llu "
              "lat_p50_ms=%.3f lat_p99_ms=%.3f lat_max_ms=%.3f cpu_s=%.2f cpu_us_per_msg=%.2f\n",
              o.mode.c_str(), o.follow, followed, o.rate * o.secs * followed / o.channels, conns.size(), static_cast<unsigned long long>(rd.received),
              static_cast<unsigned long long>(rd.bad), static_cast<unsigned long long>(rd.commands),
              static_cast<unsigned long long>(rd.replies), rd.lat.q_ms(0.5), rd.lat.q_ms(0.99),
              rd.lat.q_ms(1.0), cpu, rd.received ? cpu / rd.received * 1e6 : 0.0);
  for (auto& c : conns) redisFree(c.c);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const Opts o = parse(argc, argv);
  if (o.role == "write") return write(o);
  if (o.role == "read") return read(o);
  die("role must be write or read");
}
