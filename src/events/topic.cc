#include "events/topic.h"

#include <algorithm>
#include <boost/asio/steady_timer.hpp>
#include <charconv>
#include <simdjson.h>
#include <spdlog/spdlog.h>
#include <unordered_map>

#include "common/check.h"
#include "common/clock.h"
#include "common/json_writer.h"
#include "events/topic_channel.h"
#include "protocol/encoder.h"
#include "runtime/loop_tail.h"

namespace parley::events {

namespace {

const Error kStoreDown{ErrorCode::kUnavailable, "store unavailable", 1000};

using PartList = std::vector<std::pair<uint32_t, uint64_t>>;

// The commit log's record: every partition's committed offset, -1 for none.
// Its own data, but read back from disk: parsed defensively.
std::string encode_offsets(const std::vector<std::optional<uint64_t>>& committed) {
  std::string out = "{\"o\":[";
  for (size_t i = 0; i < committed.size(); ++i) {
    if (i) out.push_back(',');
    out += committed[i] ? std::to_string(*committed[i]) : std::string("-1");
  }
  out += "]}";
  return out;
}

bool decode_offsets(std::string_view s, std::vector<std::optional<uint64_t>>& committed) {
  constexpr std::string_view kHead = "{\"o\":[";
  if (s.substr(0, kHead.size()) != kHead || s.size() < kHead.size() + 2 || s.substr(s.size() - 2) != "]}") {
    return false;
  }
  s = s.substr(kHead.size(), s.size() - kHead.size() - 2);
  std::vector<std::optional<uint64_t>> out;
  while (!s.empty()) {
    const size_t comma = s.find(',');
    std::string_view item = s.substr(0, comma);
    if (item == "-1") {
      out.emplace_back();
    } else {
      uint64_t v = 0;
      auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
      if (ec != std::errc() || ptr != item.data() + item.size()) return false;
      out.emplace_back(v);
    }
    if (comma == std::string_view::npos) break;
    s = s.substr(comma + 1);
  }
  // A topic may have been configured with more (or fewer) partitions since.
  for (size_t i = 0; i < committed.size() && i < out.size(); ++i) committed[i] = out[i];
  return true;
}

}  // namespace

Topic::Topic(unsigned loop, runtime::LoopGroup& loops, store::Store& store,
             const TenantConfig& tenant, std::string name, const TopicConfig& cfg,
             std::shared_ptr<TopicStats> stats, metrics::Metrics& metrics, TopicNodes nodes,
             const seqlog::Options& follow)
    : loop_(loop),
      loops_(loops),
      out_(loops),
      store_(store),
      tenant_(tenant),
      name_(std::move(name)),
      cfg_(cfg),
      stats_(std::move(stats)),
      metrics_(metrics),
      node_(std::move(nodes.node)),
      leases_((nodes.cluster ? *nodes.cluster : cluster::in_process()).leases()) {
  cluster::Broker& broker = (nodes.cluster ? *nodes.cluster : cluster::in_process()).broker();
  snap_id_ = store::ChannelId{tenant.id, snapshot_channel(name_)};
  hash_id_ = store::ChannelId{tenant.id, key_hash_channel(name_)};
  appended_ = std::make_unique<Partition::AppendInbox>(
      loops.loop(loop), [this](std::vector<Partition::Appended>& batch) {
        for (auto& a : batch) parts_[a.part]->on_appended(std::move(a.out));
      });
  parts_.reserve(cfg.partitions);
  for (uint32_t p = 0; p < cfg.partitions; ++p) {
    auto part = std::make_unique<Partition>(
        loop, loops, store, store::ChannelId{tenant.id, partition_channel(name_, p)}, name_,
        p, cfg, metrics, follow, broker, nodes.listener);
    part->set_inbox(appended_.get());
    part->set_outbox(&out_);
    part->set_on_committed([this, p](uint64_t off) {
      stats_->committed.fetch_add(1, std::memory_order_relaxed);
      stats_->ends[p].store(off, std::memory_order_relaxed);
      schedule_pump();
    });
    part->set_observer([this](const CommittedEvent& e) {
      for (auto& b : boards_) b->on_event(e.type, e.body);
    });
    parts_.push_back(std::move(part));
  }
  if (cfg.tick_ms > 0) tick_ = std::make_unique<boost::asio::steady_timer>(loops.loop(loop));
  for (const auto& [board, bc] : tenant.leaderboards) {
    if (bc.topic == name_) boards_.push_back(std::make_unique<Leaderboard>(loop, loops, board, bc, metrics));
  }
}

Leaderboard* Topic::board(std::string_view name) {
  for (auto& b : boards_) {
    if (b->name() == name) return b.get();
  }
  return nullptr;
}

void Topic::rebuild_boards() {
  if (boards_.empty()) return;
  for (auto& b : boards_) b->begin_rebuild();
  when_ready([this] {
    if (!ready()) {
      // The store cannot say what it holds yet: try again in a second; the
      // boards hold their events and `rank` requests meanwhile.
      rebuild_retry_ = std::make_unique<boost::asio::steady_timer>(loops_.loop(loop_));
      rebuild_retry_->expires_after(std::chrono::seconds(1));
      rebuild_retry_->async_wait([this](const boost::system::error_code& ec) {
        if (!ec) rebuild_boards();
      });
      return;
    }
    // Everything up to the recovery and not in the snapshot is replayed; what
    // commits later is held by the boards and applied after it.
    load_snapshot([this](std::vector<uint64_t> from) {
      // The boards saw (or hold) every event after each partition's recovery
      // cut; the replay covers the ones up to it.
      auto left = std::make_shared<size_t>(parts_.size());
      for (uint32_t p = 0; p < partitions(); ++p) {
        const Partition& part = *parts_[p];
        replay_partition(p, std::max(from[p], part.earliest() - 1), part.recovered_cut(), left);
      }
    });
  });
}

void Topic::replay_partition(uint32_t p, uint64_t after, uint64_t cut, std::shared_ptr<size_t> left) {
  if (after >= cut) {
    if (--*left == 0) {
      for (auto& b : boards_) b->finish_rebuild();
      arm_snapshot();
    }
    return;
  }
  const auto n = static_cast<uint32_t>(std::min<uint64_t>(1024, cut - after));
  store_.read_after(parts_[p]->store_id(), after, n, [this, p, after, cut, left](auto r) {
    loops_.run_on(loop_, [this, p, after, cut, left, r = std::move(r)]() mutable {
      if (!r) {
        spdlog::warn("events: rebuilding the boards of {}/{}: partition {} unreadable after {}",
                     tenant_.id, name_, p, after);
        return replay_partition(p, cut, cut, left);
      }
      if (r->empty()) return replay_partition(p, cut, cut, left);
      uint64_t last = after;
      thread_local simdjson::dom::parser parser;
      for (const auto& m : *r) {
        if (m.seq > cut) break;
        last = m.seq;
        // The stored body is {"key","type","body"} (partition.cc).
        simdjson::dom::element root;
        std::string_view type;
        simdjson::dom::element body;
        if (parser.parse(m.body.data(), m.body.size()).get(root) ||
            root["type"].get_string().get(type) || root["body"].get(body)) {
          continue;
        }
        const std::string type_copy(type);
        const std::string text = simdjson::minify(body);
        for (auto& b : boards_) b->replay(type_copy, text);
      }
      replay_partition(p, last == after ? cut : last, cut, left);
    });
  });
}

bool Topic::ready() const {
  for (const auto& p : parts_) {
    if (!p->ready()) return false;
  }
  return key_hash_.has_value();
}

void Topic::when_ready(std::function<void()> fn) {
  PARLEY_CHECK(runtime::LoopGroup::current() == static_cast<int>(loop_));
  if (ready()) return fn();
  waiting_.push_back(std::move(fn));
  if (recovering_ > 0) return;
  for (auto& p : parts_) {
    if (!p->needs_recovery()) continue;
    ++recovering_;
    p->recover([this] { recovered_one(); });
  }
  // Else a partition is failed with appends still being answered: those who
  // wait see !ready() and answer unavailable.
  if (recovering_ == 0) settle();
}

void Topic::recovered_one() {
  if (--recovering_ > 0) return;
  settle();
}

void Topic::settle() {
  const bool parts_ready =
      std::all_of(parts_.begin(), parts_.end(), [](const auto& p) { return p->ready(); });
  if (parts_ready && !key_hash_) {
    // load_key_hash runs the waiting when it is done, whatever it found.
    if (!hash_loading_) load_key_hash();
    return;
  }
  run_waiting();
}

void Topic::run_waiting() {
  auto waiting = std::move(waiting_);
  waiting_.clear();
  for (auto& w : waiting) w();
}

void Topic::schedule_pump() {
  if (pump_scheduled_) return;
  pump_scheduled_ = true;
  if (tick_) {
    // tick_ms: the events committed during a tick go out together.
    tick_->expires_after(std::chrono::milliseconds(cfg_.tick_ms));
    tick_->async_wait([this](const boost::system::error_code&) {
      pump_scheduled_ = false;
      pump();
    });
    return;
  }
  // After what this loop iteration commits: events that completed together
  // go out in one frame per cursor.
  loops_.run_on(loop_, [this] {
    pump_scheduled_ = false;
    pump();
  });
}

void Topic::pump() {
  // One post per loop for the whole pass (runtime/outbox.h); each connection's
  // frames leave corked, in one write.
  runtime::TailScope pass;
  for (auto& p : parts_) {
    if (p->cursors()) p->pump();
  }
}

void Topic::send_to(const std::weak_ptr<EventSink>& sink, std::string frame) {
  auto s = sink.lock();
  if (!s) return;
  out_.to(s->loop(), [s, frame = std::move(frame)]() mutable {
    s->deliver_event_frame(std::move(frame), nullptr);
  });
}

// ---- emit -------------------------------------------------------------------

namespace {

// An emit waiting for its events, on the topic's loop.
struct EmitState {
  EmitOutcome out;
  size_t remaining = 0;
  std::vector<size_t> copy_of;  // an id repeated within the emit: the first's index
  unsigned reply_loop = 0;
  std::function<void(EmitOutcome)> done;
};

}  // namespace

void Topic::emit(EmitRequest req) {
  when_ready([this, req = std::move(req)]() mutable { run_emit(std::move(req)); });
}

void Topic::run_emit(EmitRequest req) {
  auto reply = [this](unsigned loop, std::function<void(EmitOutcome)> done,
                      EmitOutcome out) {
    out_.to(loop, [done = std::move(done), out = std::move(out)]() mutable {
      done(std::move(out));
    });
  };
  if (!ready()) return reply(req.reply_loop, std::move(req.done), EmitOutcome::failed(kStoreDown));
  const size_t n = req.events.size();
  if (inflight_ + n > kTopicInflightLimit) {
    return reply(req.reply_loop, std::move(req.done),
                 EmitOutcome::failed(
                     Error{ErrorCode::kBackpressure, "topic append queue full", 100}));
  }
  auto state = std::make_shared<EmitState>();
  state->out.offs.resize(n);
  state->out.dup.assign(n, false);
  state->copy_of.assign(n, SIZE_MAX);
  state->reply_loop = req.reply_loop;
  state->done = std::move(req.done);
  // PROTOCOL.md: a repeated id within one emit is a duplicate of the first.
  // Sorted (hash, index) pairs instead of a hash map: one allocation per emit,
  // not one node per event; equal hashes are compared by text.
  std::vector<std::pair<size_t, size_t>> by_hash;
  by_hash.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const auto& id = req.events[i].id;
    if (!id.empty()) by_hash.emplace_back(std::hash<std::string_view>{}(id), i);
  }
  std::sort(by_hash.begin(), by_hash.end());
  for (size_t a = 0; a < by_hash.size();) {
    size_t b = a + 1;
    while (b < by_hash.size() && by_hash[b].first == by_hash[a].first) ++b;
    // [a, b): one hash, in index order; each id's first occurrence wins.
    for (size_t x = a + 1; x < b; ++x) {
      const size_t i = by_hash[x].second;
      for (size_t y = a; y < x; ++y) {
        const size_t j = by_hash[y].second;
        if (state->copy_of[j] == SIZE_MAX && req.events[j].id == req.events[i].id) {
          state->copy_of[i] = j;
          break;
        }
      }
    }
    a = b;
  }
  for (size_t i = 0; i < n; ++i) {
    if (state->copy_of[i] == SIZE_MAX) ++state->remaining;
  }
  inflight_ += state->remaining;
  const int64_t now = wall_ms();
  Partition::StoreBatch batch;
  batch.reserve(state->remaining);
  auto finish = [this, state] {
    auto& out = state->out;
    for (size_t i = 0; i < state->copy_of.size(); ++i) {
      if (state->copy_of[i] == SIZE_MAX) continue;
      out.offs[i] = out.offs[state->copy_of[i]];
      out.dup[i] = true;
    }
    out_.to(state->reply_loop, [state] { state->done(std::move(state->out)); });
  };
  for (size_t i = 0; i < n; ++i) {
    if (state->copy_of[i] != SIZE_MAX) continue;
    auto& e = req.events[i];
    const uint32_t p = partition_of(e.key, partitions(), seed_of(*key_hash_));
    state->out.offs[i].first = p;
    parts_[p]->append(req.from, e, now, [this, state, i, finish, arrived = req.arrived_ns](const store::AppendOutcome& l) {
      --inflight_;
      if (l) {
        if (!l->dup) metrics_.local().observe(metrics::Stage::kEventAppend, steady_ns() - arrived);
        state->out.offs[i].second = l->seq;
        state->out.dup[i] = l->dup;
      } else if (state->out.status) {
        state->out.status = l.error();
      }
      if (--state->remaining == 0) finish();
    }, batch);
  }
  // In offset order per partition, as sequenced above.
  if (!batch.empty()) store_.append_many(std::move(batch));
}

// ---- tail -------------------------------------------------------------------

void Topic::tail(TailRequest req) {
  when_ready([this, req = std::move(req)]() mutable { run_tail(std::move(req)); });
}

void Topic::run_tail(TailRequest req) {
  StartOutcome out;
  auto reply = [this, &req](StartOutcome out) {
    out_.to(req.reply_loop, [done = std::move(req.done), out = std::move(out)]() mutable {
      done(std::move(out));
    });
  };
  if (!ready()) return reply(StartOutcome::failed(kStoreDown));
  std::vector<uint32_t> which;
  if (req.p) {
    if (*req.p >= partitions()) return reply(StartOutcome::failed(Error{ErrorCode::kNotFound, "unknown partition"}));
    which.push_back(*req.p);
  } else {
    for (uint32_t p = 0; p < partitions(); ++p) which.push_back(p);
  }
  for (uint32_t p : which) {
    const Partition& part = *parts_[p];
    // Reads include every event acknowledged before them: the committed end.
    const uint64_t latest = part.committed() + 1;
    uint64_t next = latest;
    if (req.from == protocol::TailFrom::kEarliest) {
      next = part.earliest();
    } else if (req.from == protocol::TailFrom::kOffset) {
      if (req.from_off < part.earliest() || req.from_off > latest) {
        auto bad = StartOutcome::failed(
            Error{ErrorCode::kOutOfRange, "offset outside what the partition holds"});
        bad.range = OffsetRange{p, part.earliest(), latest};
        return reply(std::move(bad));
      }
      next = req.from_off;
    }
    out.parts.push_back({p, next});
  }
  TailState& ts = tails_[req.conn];
  ts.cursors.resize(partitions(), 0);
  for (const auto& pn : out.parts) {
    // A second tail replaces the first for the partitions it names.
    if (ts.cursors[pn.p]) parts_[pn.p]->close_cursor(ts.cursors[pn.p]);
    ts.cursors[pn.p] = parts_[pn.p]->open_cursor(req.sink, pn.next, {});
  }
  reply(std::move(out));
  // After the reply: its events follow it to the connection.
  schedule_pump();
}

void Topic::close_tails(uint64_t conn) {
  auto it = tails_.find(conn);
  if (it == tails_.end()) return;
  for (uint32_t p = 0; p < it->second.cursors.size(); ++p) {
    if (it->second.cursors[p]) parts_[p]->close_cursor(it->second.cursors[p]);
  }
  tails_.erase(it);
}

void Topic::leave(const std::string& group, uint64_t conn, unsigned reply_loop,
                  std::function<void()> done) {
  if (group.empty()) {
    close_tails(conn);
  } else if (Group* g = find_group(group)) {
    remove_member(*g, conn);
  }
  out_.to(reply_loop, std::move(done));
}

void Topic::disconnect(uint64_t conn) {
  close_tails(conn);
  for (auto& [name, g] : groups_) remove_member(*g, conn);
}

// ---- consumer groups ----------------------------------------------------------

Topic::Group* Topic::find_group(const std::string& name) {
  auto it = groups_.find(name);
  return it == groups_.end() ? nullptr : it->second.get();
}

void Topic::load_group(Group& g, std::function<void()> then) {
  if (g.loaded) return then();
  g.waiting.push_back(std::move(then));
  if (g.loading) return;
  g.loading = true;
  auto finish = [this, &g](bool ok) {
    g.loading = false;
    g.loaded = ok;
    auto waiting = std::move(g.waiting);
    g.waiting.clear();
    for (auto& w : waiting) w();
  };
  store_.recover(g.log, INT64_MAX, [this, &g, finish](Result<store::ChannelRecovery> rec) {
    loops_.run_on(loop_, [this, &g, finish, rec = std::move(rec)]() mutable {
      if (!rec) return finish(false);
      g.log_seq = rec->last_seq;
      if (g.log_seq == 0) {
        stats_->set_group_offsets(g.name, g.committed);
        return finish(true);
      }
      store_.read_before(g.log, g.log_seq + 1, 1, [this, &g, finish](auto r) {
        loops_.run_on(loop_, [this, &g, finish, r = std::move(r)]() mutable {
          if (!r) return finish(false);
          g.committed.assign(partitions(), std::nullopt);
          if (!r->empty() && !decode_offsets(r->back().body, g.committed)) {
            // Never assumed well-formed: a damaged record restarts the group
            // from the first kept offsets (at least once: more, not less).
            spdlog::warn("events: unreadable commit record of group {} of topic {}/{}", g.name,
                         tenant_.id, name_);
            g.committed.assign(partitions(), std::nullopt);
          }
          stats_->set_group_offsets(g.name, g.committed);
          finish(true);
        });
      });
    });
  });
}

uint64_t Topic::next_of(const Group& g, uint32_t p) const {
  const Partition& part = *parts_[p];
  const uint64_t first = part.earliest();
  if (!g.committed[p]) return first;
  return std::max(first, *g.committed[p] + 1);
}

void Topic::rebalance(Group& g, uint64_t quiet) {
  const uint64_t old_gen = g.gen;
  ++g.gen;
  for (auto& m : g.members) {
    for (size_t k = 0; k < m.parts.size(); ++k) parts_[m.parts[k]]->close_cursor(m.cursors[k]);
    if (m.conn != quiet && old_gen > 0) {
      std::string f;
      protocol::encode_revoked(f, name_, g.name, old_gen, m.parts);
      send_to(m.sink, std::move(f));
    }
    m.parts.clear();
    m.cursors.clear();
  }
  if (g.members.empty()) return;
  for (uint32_t p = 0; p < partitions(); ++p) {
    Member& m = g.members[p % g.members.size()];
    m.parts.push_back(p);
    m.cursors.push_back(parts_[p]->open_cursor(m.sink, next_of(g, p), g.name));
  }
  for (auto& m : g.members) {
    if (m.conn == quiet) continue;
    PartList parts;
    for (uint32_t p : m.parts) parts.emplace_back(p, next_of(g, p));
    std::string f;
    protocol::encode_assigned(f, {}, name_, g.name, g.gen, parts);
    send_to(m.sink, std::move(f));
  }
}

void Topic::remove_member(Group& g, uint64_t conn) {
  auto it = std::find_if(g.members.begin(), g.members.end(),
                         [conn](const Member& m) { return m.conn == conn; });
  if (it == g.members.end()) return;
  for (size_t k = 0; k < it->parts.size(); ++k) parts_[it->parts[k]]->close_cursor(it->cursors[k]);
  g.members.erase(it);
  // A leaving member gets neither revoked nor assigned.
  rebalance(g, conn);
  schedule_pump();
  if (g.members.empty() && g.held) {
    // Another node may take the group now (it reads the commit log afresh).
    g.held = false;
    leases_.release(g.log, node_);
  }
}

void Topic::hold_group(Group& g, std::function<void(Status)> then) {
  if (!store_.assigns_seq() || g.held) return then(Status::ok());
  g.claim_waiting.push_back(std::move(then));
  if (g.claiming) return;
  g.claiming = true;
  leases_.claim(g.log, node_, kGroupHoldMs, [this, &g](Result<std::string> r) {
    loops_.run_on(loop_, [this, &g, r = std::move(r)]() mutable {
      g.claiming = false;
      Status st = Status::ok();
      if (!r) {
        st = kStoreDown;
      } else if (*r != node_) {
        // PROTOCOL.md's codes only: retryable, with the reason in msg.
        st = Error{ErrorCode::kUnavailable,
                   "consumer group is served by another node: connect all its members to one node",
                   1000};
      } else {
        g.held = true;
        // Another node may have committed while it held the group.
        g.loaded = false;
        arm_group_renewal();
      }
      auto waiting = std::move(g.claim_waiting);
      g.claim_waiting.clear();
      for (auto& w : waiting) w(st);
    });
  });
}

void Topic::arm_group_renewal() {
  if (renew_armed_) return;
  if (!renew_timer_) renew_timer_ = std::make_unique<boost::asio::steady_timer>(loops_.loop(loop_));
  renew_armed_ = true;
  renew_timer_->expires_after(std::chrono::milliseconds(kGroupHoldMs / 3));
  renew_timer_->async_wait([this](const boost::system::error_code& ec) {
    renew_armed_ = false;
    if (!ec) renew_groups();
  });
}

void Topic::renew_groups() {
  bool any = false;
  for (auto& [name, gp] : groups_) {
    Group& g = *gp;
    if (!g.held) continue;
    if (g.members.empty()) {
      g.held = false;
      leases_.release(g.log, node_);
      continue;
    }
    any = true;
    leases_.claim(g.log, node_, kGroupHoldMs, [this, &g](Result<std::string> r) {
      loops_.run_on(loop_, [this, &g, r = std::move(r)]() mutable {
        if (r && *r != node_) {
          // The hold lapsed (the store was out of reach for kGroupHoldMs) and
          // another node took the group: its members there and here both
          // consume until these leave. Said loudly; it needs an outage that long.
          spdlog::error("events: {}/{}: consumer group {} was taken by another node while its "
                        "members here were connected",
                        tenant_.id, name_, g.name);
        }
      });
    });
  }
  if (any) arm_group_renewal();
}

void Topic::consume(ConsumeRequest req) {
  when_ready([this, req = std::move(req)]() mutable {
    auto reply = [this](ConsumeRequest& req, StartOutcome out) {
      out_.to(req.reply_loop, [done = std::move(req.done), out = std::move(out)]() mutable {
        done(std::move(out));
      });
    };
    if (!ready()) return reply(req, StartOutcome::failed(kStoreDown));
    Group* g = find_group(req.group);
    if (!g) {
      if (groups_.size() >= kMaxGroupsPerTopic) {
        return reply(req, StartOutcome::failed(
                              Error{ErrorCode::kQuotaExceeded, "too many groups on this topic"}));
      }
      auto fresh = std::make_unique<Group>();
      fresh->name = req.group;
      fresh->log = store::ChannelId{tenant_.id, group_log_channel(name_, req.group)};
      fresh->committed.assign(partitions(), std::nullopt);
      g = groups_.emplace(req.group, std::move(fresh)).first->second.get();
    }
    hold_group(*g, [this, g, req = std::move(req), reply](Status held) mutable {
    if (!held) return reply(req, StartOutcome::failed(held.error()));
    load_group(*g, [this, g, req = std::move(req), reply]() mutable {
      if (!g->loaded) return reply(req, StartOutcome::failed(kStoreDown));
      auto mine = [&]() -> Member* {
        for (auto& m : g->members) {
          if (m.conn == req.conn) return &m;
        }
        return nullptr;
      };
      Member* m = mine();
      if (!m) {
        // Joins: everyone else is revoked and reassigned; the joiner's
        // assignment is this reply.
        g->members.push_back(Member{req.conn, req.sink, {}, {}});
        rebalance(*g, req.conn);
        m = mine();
      }
      StartOutcome out;
      out.gen = g->gen;
      for (uint32_t p : m->parts) out.parts.push_back({p, next_of(*g, p)});
      reply(req, std::move(out));
      schedule_pump();
    });
    });
  });
}

void Topic::commit(CommitRequest req) {
  auto reply = [this](CommitRequest& req, Status st, std::optional<OffsetRange> range = {}) {
    out_.to(req.reply_loop, [done = std::move(req.done), st = std::move(st), range]() mutable {
      done(std::move(st), range);
    });
  };
  Group* g = find_group(req.group);
  if (!g) return reply(req, Error{ErrorCode::kNotFound, "unknown group"});
  load_group(*g, [this, g, req = std::move(req), reply]() mutable {
    if (!g->loaded) return reply(req, kStoreDown);
    if (req.p >= partitions()) return reply(req, Error{ErrorCode::kNotFound, "unknown partition"});
    const Member* m = nullptr;
    for (const auto& x : g->members) {
      if (x.conn == req.conn) m = &x;
    }
    if (!m || req.gen != g->gen) {
      return reply(req, Error{ErrorCode::kStaleGeneration,
                              m ? "generation is not the current one" : "not a member of the group"});
    }
    if (std::find(m->parts.begin(), m->parts.end(), req.p) == m->parts.end()) {
      return reply(req, Error{ErrorCode::kForbidden, "partition not assigned to this member"});
    }
    const Partition& part = *parts_[req.p];
    if (req.off + 1 < part.earliest() || req.off > part.committed()) {
      return reply(req, Error{ErrorCode::kOutOfRange, "offset outside what the partition holds"},
                   OffsetRange{req.p, part.earliest(), part.committed() + 1});
    }
    write_commit(*g, std::move(req));
  });
}

void Topic::write_commit(Group& g, CommitRequest req) {
  g.committed[req.p] = req.off;
  stats_->set_group_offset(g.name, req.p, req.off);
  // A record holds every partition's offset: while one is being written, the
  // commits that arrive wait for the next, which carries them all (a consumer
  // committing after each frame wrote one store record per frame: ~6,000
  // records, each with its trim, per second at 35,000 events/s).
  if (g.writing) {
    g.queued.push_back(std::move(req));
    return;
  }
  std::vector<CommitRequest> reqs;
  reqs.push_back(std::move(req));
  write_commits(g, std::move(reqs));
}

void Topic::write_commits(Group& g, std::vector<CommitRequest> reqs) {
  g.writing = true;
  store::AppendRequest a{g.log,
                         store::StoredMessage{++g.log_seq, wall_ms(), "server", {},
                                              encode_offsets(g.committed)},
                         1, 0, 0};
  store_.append(std::move(a), [this, &g, reqs = std::move(reqs)](store::AppendOutcome out) mutable {
    loops_.run_on(loop_, [this, &g, reqs = std::move(reqs), out = std::move(out)]() mutable {
      g.writing = false;
      auto queued = std::move(g.queued);
      g.queued.clear();
      if (!out) {
        // Not durable: the group reloads what the store holds before its next
        // commit (its members keep their assignment). The commits queued
        // behind this write are not written either: answered the same.
        g.loaded = false;
        g.log_seq = 0;
        for (auto& q : queued) reqs.push_back(std::move(q));
        queued.clear();
      }
      const Status st = out.status();
      for (auto& req : reqs) {
        out_.to(req.reply_loop, [done = std::move(req.done), st]() mutable {
          done(std::move(st), std::nullopt);
        });
      }
      if (!queued.empty()) write_commits(g, std::move(queued));
    });
  });
}

}  // namespace parley::events
