#include "persist/persister.h"

#include <hiredis/hiredis.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <map>

#include "common/clock.h"
#include "persist/archive_writer.h"
#include "persist/dynamo_writer.h"
#include "persist/valkey_link.h"
#include "persist/wal_entry.h"
#include "persist/wal_trim.h"
#include "store/postgres/libpq.h"
#include "store/valkey/cluster_map.h"
#include "store/valkey/partition_map.h"

namespace parley::persist {

namespace {

std::string reply_error(const redisReply* r) {
  return r && r->type == REDIS_REPLY_ERROR ? std::string(r->str, r->len) : std::string();
}

using Clock = std::chrono::steady_clock;
constexpr uint32_t kMaxIdlePollMs = 1000;

}  // namespace

// One worker: its streams, a link per node they live on, a PostgreSQL connection.
class Persister::Worker {
 public:
  struct Stream {
    std::string key;
    std::string tenant;
    HostPort node;
    bool group_ready = false;
    bool own_pending = true;  // re-read this consumer's pending entries first
    std::string claim_cursor = "0-0";
    // A stream that read nothing waits before its next read, poll_ms doubling
    // to kMaxIdlePollMs: many quiet streams (tenants x partitions) cost Valkey
    // a read a second each, not one per round.
    uint32_t idle_ms = 0;
    Clock::time_point next_read{};
    WalLag lag;
  };

  explicit Worker(Persister& p) : p_(p) {
    if (!p.opts_.postgres_url.empty()) {
      writer_ = std::make_unique<ArchiveWriter>(p.opts_.postgres_url, p.opts_.postgres_timeout_ms);
    }
    if (p.opts_.dynamodb) {
      dynamo_ = std::make_unique<DynamoWriter>(*p.opts_.dynamodb, p.stats_, [&p](uint32_t ms) { return p.wait(ms); });
    }
  }

  std::vector<Stream> streams;
  std::atomic<int64_t> lag_entries{0}, pending{0}, lag_ms{0}, lost{0};

  void run();

 private:
  struct Read {
    std::vector<WalEntry> entries;
    std::vector<std::string> ack;  // ids to acknowledge once the batch is committed
  };
  ValkeyLink& link(const HostPort& hp);
  // One pipeline per node: group creation, reads, claims. Fills reads[i] per stream.
  void read_round(bool claim, std::vector<Read>& reads);
  bool write_batch(const std::vector<Read>& reads, Clock::time_point& next_trim);
  bool write_postgres(const std::vector<const ArchiveRow*>& rows, const std::function<void()>& upkeep);
  void acknowledge(const std::vector<Read>& reads);
  void maintain();
  // Streams grouped by the node they live on (index lists).
  std::map<std::string, std::vector<size_t>> by_node() const;
  void on_valkey_error(const std::vector<size_t>& which, const Error& e);
  // XAUTOCLAIM's entries become this round's, to be written and acknowledged.
  void take_claimed(Stream& s, const redisReply* r, Read& out);

  Persister& p_;
  std::unique_ptr<ArchiveWriter> writer_;  // with postgres_url
  std::unique_ptr<DynamoWriter> dynamo_;   // with dynamodb
  std::map<std::string, std::unique_ptr<ValkeyLink>> links_;
  int64_t last_error_log_ms_ = 0;
};

ValkeyLink& Persister::Worker::link(const HostPort& hp) {
  const std::string name = hp.ip + ":" + std::to_string(hp.port);
  auto& l = links_[name];
  if (!l) l = std::make_unique<ValkeyLink>(hp, static_cast<int>(p_.opts_.valkey_timeout_ms));
  return *l;
}

std::map<std::string, std::vector<size_t>> Persister::Worker::by_node() const {
  std::map<std::string, std::vector<size_t>> out;
  for (size_t i = 0; i < streams.size(); ++i) {
    out[streams[i].node.ip + ":" + std::to_string(streams[i].node.port)].push_back(i);
  }
  return out;
}

void Persister::Worker::on_valkey_error(const std::vector<size_t>& which, const Error& e) {
  p_.stats_.valkey_errors.fetch_add(1, std::memory_order_relaxed);
  p_.stats_.valkey_up.store(false, std::memory_order_relaxed);
  for (size_t i : which) {
    streams[i].own_pending = true;
    streams[i].group_ready = false;
  }
  const int64_t now = wall_ms();
  if (now - last_error_log_ms_ >= 5000) {
    last_error_log_ms_ = now;
    spdlog::warn("persister: {}", e.msg);
  }
}

void Persister::Worker::read_round(bool claim, std::vector<Read>& reads) {
  const auto& o = p_.opts_;
  for (auto& [name, which] : by_node()) {
    std::vector<Command> cmds;
    // Per stream: [group create], read, [claim]; remember where each reply lands.
    struct Slots {
      int create = -1, read = -1, claim = -1;
    };
    std::vector<Slots> slots(which.size());
    const auto now = Clock::now();
    for (size_t j = 0; j < which.size(); ++j) {
      Stream& s = streams[which[j]];
      if (!s.group_ready) {
        slots[j].create = static_cast<int>(cmds.size());
        cmds.push_back({"XGROUP", "CREATE", s.key, o.group, "0", "MKSTREAM"});
      }
      if (s.own_pending || !s.group_ready || now >= s.next_read) {
        slots[j].read = static_cast<int>(cmds.size());
        cmds.push_back({"XREADGROUP", "GROUP", o.group, o.consumer, "COUNT", std::to_string(o.batch),
                        "STREAMS", s.key, s.own_pending ? "0" : ">"});
      }
      if (claim && !s.own_pending) {
        slots[j].claim = static_cast<int>(cmds.size());
        cmds.push_back({"XAUTOCLAIM", s.key, o.group, o.consumer, std::to_string(o.claim_idle_ms),
                        s.claim_cursor, "COUNT", std::to_string(o.batch)});
      }
    }
    if (cmds.empty()) continue;
    auto replies = link(streams[which.front()].node).pipeline(cmds);
    if (!replies) {
      on_valkey_error(which, replies.error());
      continue;
    }
    p_.stats_.valkey_up.store(true, std::memory_order_relaxed);
    for (size_t j = 0; j < which.size(); ++j) {
      Stream& s = streams[which[j]];
      Read& out = reads[which[j]];
      if (slots[j].create >= 0) {
        const std::string err = reply_error((*replies)[slots[j].create].get());
        if (err.empty() || err.rfind("BUSYGROUP", 0) == 0) s.group_ready = true;
      }
      if (slots[j].read < 0) {
        if (slots[j].claim >= 0) take_claimed(s, (*replies)[slots[j].claim].get(), out);
        continue;
      }
      const redisReply* rr = (*replies)[slots[j].read].get();
      const std::string err = reply_error(rr);
      if (!err.empty()) {
        if (err.rfind("MOVED", 0) == 0) {
          if (auto red = store::valkey::parse_redirect(err)) {
            s.node = red->to;
            s.group_ready = false;
          }
        } else if (err.rfind("NOGROUP", 0) == 0) {
          s.group_ready = false;  // the stream or its group went away (a Valkey without its data)
        }
        on_valkey_error({}, Error{ErrorCode::kUnavailable, "XREADGROUP " + s.key + ": " + err});
        if (slots[j].claim >= 0) take_claimed(s, (*replies)[slots[j].claim].get(), out);
        continue;
      }
      auto got = parse_read(rr, s.tenant);
      if (!got) {
        on_valkey_error({}, got.error());
        continue;
      }
      if (got->empty()) {
        if (!s.own_pending) {
          s.idle_ms = std::min(kMaxIdlePollMs, std::max(o.poll_ms, s.idle_ms * 2));
          s.next_read = now + std::chrono::milliseconds(s.idle_ms);
        }
        s.own_pending = false;
      } else {
        s.idle_ms = 0;
        s.next_read = now;
      }
      for (auto& e : *got) {
        out.ack.push_back(e.id);
        out.entries.push_back(std::move(e));
      }
      if (slots[j].claim >= 0) take_claimed(s, (*replies)[slots[j].claim].get(), out);
    }
  }
}

void Persister::Worker::take_claimed(Stream& s, const redisReply* r, Read& out) {
  auto c = parse_claim(r, s.tenant);
  if (!c) return;
  s.claim_cursor = c->cursor;
  p_.stats_.reclaimed.fetch_add(c->entries.size(), std::memory_order_relaxed);
  for (auto& e : c->entries) {
    out.ack.push_back(e.id);
    out.entries.push_back(std::move(e));
  }
}

// Writes every row read this round to each sink: PostgreSQL in one
// transaction, retried while it fails (the streams' maintenance goes on
// meanwhile, so the lag metrics show the outage); then DynamoDB, retried the
// same way (dynamo_writer.h). False only when stopping before both had it.
bool Persister::Worker::write_batch(const std::vector<Read>& reads, Clock::time_point& next_trim) {
  std::vector<const ArchiveRow*> rows;
  uint64_t unusable = 0;
  for (const auto& r : reads) {
    for (const auto& e : r.entries) {
      if (e.row) {
        rows.push_back(&*e.row);
      } else {
        ++unusable;
      }
    }
  }
  if (unusable) {
    p_.stats_.unusable.fetch_add(unusable, std::memory_order_relaxed);
    spdlog::warn("persister: {} WAL entries without a usable row (deleted by the stream cap, or malformed)",
                 unusable);
  }
  if (rows.empty()) return true;
  auto upkeep = [&] {
    if (Clock::now() >= next_trim) {
      maintain();
      next_trim = Clock::now() + std::chrono::milliseconds(p_.opts_.trim_interval_ms);
    }
  };
  if (writer_ && !write_postgres(rows, upkeep)) return false;
  if (dynamo_ && !dynamo_->write(rows, upkeep)) return false;
  p_.stats_.batches.fetch_add(1, std::memory_order_relaxed);
  return true;
}

bool Persister::Worker::write_postgres(const std::vector<const ArchiveRow*>& rows,
                                       const std::function<void()>& upkeep) {
  uint32_t backoff = 100;
  for (;;) {
    const int64_t t0 = steady_ns();
    auto w = writer_->write(rows);
    if (w) {
      p_.stats_.write_seconds.observe_ns(steady_ns() - t0);
      p_.stats_.rows_written.fetch_add(w->inserted, std::memory_order_relaxed);
      p_.stats_.duplicates.fetch_add(w->duplicates, std::memory_order_relaxed);
      p_.stats_.postgres_up.store(true, std::memory_order_relaxed);
      return true;
    }
    p_.stats_.postgres_errors.fetch_add(1, std::memory_order_relaxed);
    p_.stats_.postgres_up.store(false, std::memory_order_relaxed);
    const int64_t now = wall_ms();
    if (now - last_error_log_ms_ >= 5000) {
      last_error_log_ms_ = now;
      spdlog::warn("persister: {} rows not written, retrying: {}", rows.size(), w.error().msg);
    }
    upkeep();
    if (!p_.wait(backoff)) return false;
    backoff = std::min<uint32_t>(backoff * 2, 2000);
  }
}

void Persister::Worker::acknowledge(const std::vector<Read>& reads) {
  const auto& o = p_.opts_;
  for (auto& [name, which] : by_node()) {
    std::vector<Command> cmds;
    std::vector<size_t> of;
    uint64_t n = 0;
    for (size_t i : which) {
      if (reads[i].ack.empty()) continue;
      Command c = {"XACK", streams[i].key, o.group};
      c.insert(c.end(), reads[i].ack.begin(), reads[i].ack.end());
      n += reads[i].ack.size();
      cmds.push_back(std::move(c));
      of.push_back(i);
    }
    if (cmds.empty()) continue;
    auto replies = link(streams[which.front()].node).pipeline(cmds);
    if (!replies) {
      // Still pending: re-read after reconnecting, written again as duplicates.
      on_valkey_error(of, replies.error());
      continue;
    }
    p_.stats_.acked.fetch_add(n, std::memory_order_relaxed);
    for (size_t k = 0; k < of.size(); ++k) {
      if (!reply_error((*replies)[k].get()).empty()) streams[of[k]].own_pending = true;
    }
  }
}

void Persister::Worker::maintain() {
  const auto& o = p_.opts_;
  for (auto& [name, which] : by_node()) {
    std::vector<Command> cmds;
    for (size_t i : which) cmds.push_back({"EVAL", wal_trim_script(), "1", streams[i].key, o.group});
    auto replies = link(streams[which.front()].node).pipeline(cmds);
    if (!replies) {
      on_valkey_error(which, replies.error());
      continue;
    }
    for (size_t k = 0; k < which.size(); ++k) {
      auto l = parse_wal_lag((*replies)[k].get());
      if (!l) continue;
      streams[which[k]].lag = *l;
      p_.stats_.trimmed.fetch_add(static_cast<uint64_t>(std::max<int64_t>(0, l->trimmed)),
                                  std::memory_order_relaxed);
    }
  }
  int64_t entries = 0, pend = 0, age = 0, lost_n = 0;
  for (const auto& s : streams) {
    entries += s.lag.pending + std::max<int64_t>(0, s.lag.undelivered);
    pend += s.lag.pending;
    age = std::max(age, s.lag.oldest_ms);
    lost_n += s.lag.lost ? 1 : 0;
  }
  lag_entries.store(entries, std::memory_order_relaxed);
  pending.store(pend, std::memory_order_relaxed);
  lag_ms.store(age, std::memory_order_relaxed);
  lost.store(lost_n, std::memory_order_relaxed);
}

void Persister::Worker::run() {
  const auto& o = p_.opts_;
  auto next_claim = Clock::now();
  auto next_trim = Clock::now();
  const auto claim_every = std::chrono::milliseconds(std::max<uint32_t>(100, o.claim_idle_ms / 2));
  while (!p_.stop_flag_.load()) {
    const bool claim = Clock::now() >= next_claim;
    if (claim) next_claim = Clock::now() + claim_every;
    std::vector<Read> reads(streams.size());
    read_round(claim, reads);
    size_t n = 0;
    for (const auto& r : reads) n += r.entries.size();
    if (n > 0) {
      if (!write_batch(reads, next_trim)) break;  // stopping: left pending
      acknowledge(reads);
    }
    if (Clock::now() >= next_trim) {
      maintain();
      next_trim = Clock::now() + std::chrono::milliseconds(o.trim_interval_ms);
    }
    if (n == 0 && !p_.wait(o.poll_ms)) break;
  }
}

Persister::Persister(PersisterOptions opts) : opts_(std::move(opts)) {}

Persister::~Persister() { stop(); }

bool Persister::wait(uint32_t ms) {
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, std::chrono::milliseconds(ms), [this] { return stopping_; });
  return !stopping_;
}

Status Persister::start() {
  if (opts_.nodes.empty()) return Error{ErrorCode::kBadRequest, "valkey.nodes is empty"};
  if (opts_.postgres_url.empty() && !opts_.dynamodb) {
    return Error{ErrorCode::kBadRequest, "neither postgres.url nor [dynamodb] is set"};
  }
  if (opts_.tenants.empty()) return Error{ErrorCode::kBadRequest, "no tenants"};
  if (opts_.partitions == 0 || opts_.batch == 0) return Error{ErrorCode::kBadRequest, "partitions and batch must be > 0"};
  if (opts_.consumer.empty()) return Error{ErrorCode::kBadRequest, "persist.consumer is empty"};
  if (!opts_.postgres_url.empty()) {
    if (auto lib = store::postgres::libpq(); !lib) return lib.error();
  }
  std::vector<HostPort> nodes;
  for (const auto& n : opts_.nodes) {
    auto hp = parse_host_port(n);
    if (!hp) return Error{ErrorCode::kBadRequest, "valkey.nodes: " + n + ": " + hp.error().msg};
    nodes.push_back(*hp);
  }
  std::vector<store::valkey::SlotRange> slots;
  if (opts_.cluster) {
    auto r = store::valkey::discover(nodes, static_cast<int>(opts_.valkey_timeout_ms));
    if (!r) return Error{ErrorCode::kUnavailable, r.error().msg};
    slots = std::move(*r);
  }
  const uint32_t threads = std::max<uint32_t>(1, opts_.threads);
  for (uint32_t w = 0; w < threads; ++w) workers_.push_back(std::make_unique<Worker>(*this));
  size_t i = 0;
  for (const auto& tenant : opts_.tenants) {
    for (uint32_t k = 0; k < opts_.partitions; ++k, ++i) {
      Worker::Stream s;
      s.key = store::valkey::hash_tag(tenant, k) + ":w";
      s.tenant = tenant;
      s.node = nodes[k % nodes.size()];
      if (opts_.cluster) {
        const uint16_t slot = store::valkey::key_slot(s.key);
        for (const auto& r : slots) {
          if (slot >= r.first && slot <= r.last) s.node = r.master;
        }
      }
      workers_[i % threads]->streams.push_back(std::move(s));
    }
  }
  stream_count_ = i;
  for (auto& w : workers_) {
    threads_.emplace_back([w = w.get()] {
      pthread_setname_np(pthread_self(), "parley-persist");
      w->run();
    });
  }
  return Status::ok();
}

void Persister::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  stop_flag_.store(true);
  cv_.notify_all();
  for (auto& t : threads_) t.join();
  threads_.clear();
}

PersisterGauges Persister::gauges() const {
  PersisterGauges g;
  for (const auto& w : workers_) {
    g.lag_entries += w->lag_entries.load(std::memory_order_relaxed);
    g.pending += w->pending.load(std::memory_order_relaxed);
    g.lag_ms = std::max(g.lag_ms, w->lag_ms.load(std::memory_order_relaxed));
    g.lost_streams += w->lost.load(std::memory_order_relaxed);
  }
  return g;
}

}  // namespace parley::persist
