#include "events/partition.h"

#include <algorithm>
#include <limits>

#include <simdjson.h>
#include <spdlog/spdlog.h>

#include "common/check.h"
#include "common/clock.h"
#include "common/json_writer.h"
#include "runtime/loop_tail.h"

namespace parley::events {

namespace {

// Recent events kept encoded per partition for cursors at the head: a cursor
// further behind reads the store. Bounded by count and by bytes.
constexpr size_t kRecentEvents = 2048;
// 128 KiB is ~650 events of hunt-20k's shape, ~0.3 s of a partition at 35,000
// events/s over 16 partitions: a consumer that keeps up never reads the store,
// and 16 partitions hold 2 MiB instead of 8 (issue 12's memory figures).
constexpr size_t kRecentBytes = 128 * 1024;
constexpr uint32_t kReadPage = 512;     // events per store read of a lagging cursor
constexpr size_t kFrameEvents = 512;    // events per `events` frame
constexpr size_t kFrameBytes = 256 * 1024;

// What the store keeps as the message body: the event minus what the store
// already has (seq = off, ts, from, id). Valid JSON, so every store takes it.
std::string stored_body(const protocol::EmitEvent& e) {
  std::string out;
  out.reserve(e.key.size() + e.type.size() + e.body.size() + 32);
  JsonWriter w(out);
  w.begin_object().field("key", e.key).field("type", e.type).field_raw("body", e.body).end_object();
  return out;
}

// One element of an `events` frame's evs: the stored body's members spliced
// after off, ts, from and id, so nothing is parsed on the way out.
std::string encode_item(uint64_t off, int64_t ts, std::string_view from, std::string_view id,
                        std::string_view body) {
  std::string out;
  out.reserve(body.size() + from.size() + id.size() + 64);
  JsonWriter w(out);
  w.begin_object().field_unum("off", off).field_num("ts", ts).field("from", from);
  if (!id.empty()) w.field("id", id);
  if (body.size() > 2) {  // {"key":..,"type":..,"body":..}
    out.push_back(',');
    out.append(body.substr(1));
  } else {
    out.push_back('}');
  }
  return out;
}

}  // namespace

Partition::Partition(unsigned loop, runtime::LoopGroup& loops, store::Store& store,
                     store::ChannelId id, std::string topic, uint32_t p, const TopicConfig& cfg,
                     metrics::Metrics& metrics, const seqlog::Options& follow_opts,
                     cluster::Broker& broker, cluster::FeedListener* listener)
    : loop_(loop),
      loops_(loops),
      store_(store),
      broker_(broker),
      id_(std::move(id)),
      topic_(std::move(topic)),
      p_(p),
      cfg_(cfg),
      // retention = 0 keeps by age only: the store keeps as many as it can hold.
      history_limit_(cfg.retention == 0 ||
                             cfg.retention > std::numeric_limits<uint32_t>::max() / 2
                         ? std::numeric_limits<uint32_t>::max() / 2
                         : static_cast<uint32_t>(cfg.retention)),
      log_(store.assigns_seq(), int64_t{cfg.dedupe_window_s} * 1000),
      window_(int64_t{cfg.dedupe_window_s} * 1000),
      metrics_(metrics) {
  if (log_.store_numbers()) {
    follow(follow_opts);
    // Before the recovery reads the last offset: nothing committed after that
    // read can be missed for good.
    PARLEY_CHECK(listener != nullptr);
    broker_.watch(id_, *listener);
  }
}

Partition::~Partition() {
  if (log_.store_numbers()) broker_.unwatch(id_);
  metrics_.local().event_dedupe_held.fetch_sub(static_cast<int64_t>(held_.size()),
                                               std::memory_order_relaxed);
}

void Partition::recover(std::function<void()> then) {
  PARLEY_CHECK(runtime::LoopGroup::current() == static_cast<int>(loop_));
  log_.begin_recovery();
  auto recovered = [this, then = std::move(then)](Result<store::ChannelRecovery> rec) mutable {
    loops_.run_on(loop_, [this, then = std::move(then), rec = std::move(rec)]() mutable {
      if (!rec) {
        log_.recovery_failed();
        return then();
      }
      recent_.clear();
      recent_bytes_ = 0;
      // The log's own window stays empty: this partition keeps its ids in window_.
      std::vector<store::DedupeMark> ids;
      ids.swap(rec->marks);
      // What the feed brought while the recovery read goes out after the cut.
      recovered_cut_ = log_.recovered(*rec);
      refill_window(ids);
      then();
    });
  };
  const int64_t cutoff = log_.dedupe_cutoff(wall_ms());
  // The store numbering the log dedupes itself: no ids to hand over.
  if (log_.store_numbers()) return store_.recover(id_, cutoff, std::move(recovered));
  // Fingerprints, not strings: the window keeps nothing else (store.h).
  store_.recover_marks(id_, cutoff, window_.hash(), std::move(recovered));
}

uint64_t Partition::earliest() const {
  // The store keeps at least `retention` latest events (history_limit), and the
  // events from keep_from_ on (retention_s); it may keep a few more until it
  // trims, which a reader never relies on.
  const uint64_t by_count = log_.committed() <= history_limit_ ? 1 : log_.committed() - history_limit_ + 1;
  return std::max(by_count, std::min(keep_from_, log_.committed() + 1));
}

uint32_t Partition::limit_for(uint64_t off, int64_t now_ms) {
  if (cfg_.retention_s == 0) return history_limit_;
  // Marks (time, first offset appended at or after it), at most one per 1/64
  // of the window (and per second): the events before the newest mark that is
  // older than the window are all older than it, so they may go. Conservative:
  // an event is kept up to one grain past its retention_s.
  const int64_t window = static_cast<int64_t>(cfg_.retention_s) * 1000;
  const int64_t grain = std::max<int64_t>(1000, window / 64);
  if (age_marks_.empty() || now_ms - age_marks_.back().first >= grain) age_marks_.emplace_back(now_ms, off);
  const int64_t cutoff = now_ms - window;
  while (age_marks_.size() >= 2 && age_marks_[1].first <= cutoff) age_marks_.pop_front();
  if (age_marks_.front().first <= cutoff) keep_from_ = std::max(keep_from_, age_marks_.front().second);
  const uint64_t by_age = off - std::min(keep_from_, off) + 1;
  return static_cast<uint32_t>(std::min<uint64_t>(history_limit_, by_age));
}

void Partition::append(const std::string& from, protocol::EmitEvent& e, int64_t now_ms,
                       LandingFn fn, StoreBatch& batch) {
  if (log_.store_numbers()) {
    // The store dedupes (every node's appends) and says where the event landed.
    std::string body = stored_body(e);
    Pending f;
    f.stored = store::StoredMessage{0, now_ms, from, e.id, body};
    f.done = std::move(fn);
    log_.append({}, now_ms, std::move(f));
    store::AppendRequest req{id_, store::StoredMessage{0, now_ms, from, e.id, std::move(body)},
                             limit_for(log_.committed() + log_.inflight(), now_ms), cfg_.dedupe_window_s, 0};
    store_.append(std::move(req), [this](store::AppendOutcome out) {
      loops_.run_on(loop_, [this, out = std::move(out)]() mutable { on_appended(std::move(out)); });
    });
    return;
  }
  if (held_.empty()) {
    uint64_t off = 0;
    if (place(from, e, now_ms, fn, batch, {}, off)) return;
    hold(Held{from, std::move(e), now_ms, std::move(fn), {}});
    return confirm(off);
  }
  if (held_.size() >= kMaxHeld) {
    // A store slow to answer the confirmation must not grow this queue without
    // end: nothing was stored, the client retries later (PROTOCOL.md "Errors").
    metrics::ThreadMetrics::inc(metrics_.local().event_dedupe_held_overflows);
    return fn(store::AppendOutcome{Error{ErrorCode::kBackpressure,
                                         "partition busy confirming a duplicate", kHeldRetryMs}});
  }
  // Behind an append whose id is being confirmed: placed after it, in order.
  hold(Held{from, std::move(e), now_ms, std::move(fn), {}});
}

void Partition::hold(Held h) {
  held_.push_back(std::move(h));
  metrics_.local().event_dedupe_held.fetch_add(1, std::memory_order_relaxed);
}

void Partition::unhold_front() {
  held_.pop_front();
  metrics_.local().event_dedupe_held.fetch_sub(1, std::memory_order_relaxed);
}

bool Partition::place(const std::string& from, protocol::EmitEvent& e, int64_t now_ms,
                      LandingFn& fn, StoreBatch& batch, const std::vector<uint64_t>& ruled_out,
                      uint64_t& read_off) {
  store::DedupeKey key;
  uint64_t fp = 0;  // key's fingerprint: found, then inserted under it
  if (!e.id.empty() && cfg_.dedupe_window_s > 0) {
    window_.expire(now_ms, log_.committed() + 1);
    key = store::DedupeKey(from, e.id);
    fp = window_.fingerprint(key);
    window_.find(fp, candidates_);
    uint64_t committed_candidate = 0;
    for (const uint64_t off : candidates_) {
      if (std::find(ruled_out.begin(), ruled_out.end(), off) != ruled_out.end()) continue;
      if (off <= log_.committed()) {
        // The newest first: an id reused after its window (a recovery may hand
        // both offsets back) answers with its latest offset.
        committed_candidate = std::max(committed_candidate, off);
        continue;
      }
      const Pending* original = log_.inflight_at(off);
      if (original != nullptr && original->key == key) {
        // The original is still being written: answered once it is.
        log_.wait_for(off, std::move(fn));
        return true;
      }
    }
    if (committed_candidate != 0) {
      // Only the store holds that event's key now.
      read_off = committed_candidate;
      return false;
    }
  }
  const uint64_t off = log_.next_seq();
  std::string body = stored_body(e);
  std::string item = encode_item(off, now_ms, from, e.id, body);
  if (!key.empty()) window_.insert(fp, off, now_ms);
  log_.append({}, now_ms,
              Pending{std::move(item), e.type, std::move(e.body), std::move(fn), {}, std::move(key), off});
  submit(store::AppendRequest{id_, store::StoredMessage{off, now_ms, from, e.id, std::move(body)},
                              limit_for(off, now_ms), cfg_.dedupe_window_s, 0},
         batch);
  return true;
}

void Partition::submit(store::AppendRequest req, StoreBatch& batch) {
  if (inbox_ == nullptr) {
    batch.emplace_back(std::move(req), [this](store::AppendOutcome out) {
      loops_.run_on(loop_, [this, out = std::move(out)]() mutable { on_appended(std::move(out)); });
    });
    return;
  }
  batch.emplace_back(std::move(req), [inbox = inbox_, p = p_](store::AppendOutcome out) {
    inbox->push(Appended{p, std::move(out)});
  });
}

void Partition::confirm(uint64_t off) {
  confirming_ = true;
  const uint64_t gen = ++confirm_gen_;
  if (!confirm_timer_) confirm_timer_ = std::make_unique<boost::asio::steady_timer>(loops_.loop(loop_));
  confirm_timer_->expires_after(confirm_deadline_);  // cancels the previous read's wait
  confirm_timer_->async_wait([this, gen](const boost::system::error_code& ec) {
    if (!ec) confirm_timed_out(gen);
  });
  store_.read_after(id_, off - 1, 1, [this, off, gen](Result<std::vector<store::StoredMessage>> r) {
    loops_.run_on(loop_, [this, off, gen, r = std::move(r)]() mutable {
      // Past its deadline the appends it held were answered: nothing to decide.
      if (!confirming_ || gen != confirm_gen_) return;
      confirming_ = false;
      confirm_timer_->cancel();
      PARLEY_CHECK(!held_.empty());
      Held& h = held_.front();
      if (!r) {
        // Whether it is a duplicate cannot be told: the client retries it.
        LandingFn fn = std::move(h.fn);
        unhold_front();
        fn(store::AppendOutcome{Error{ErrorCode::kUnavailable, "store unavailable", 1000}});
      } else if (!r->empty() && r->front().seq == off && r->front().from == h.from &&
                 r->front().id == h.e.id) {
        LandingFn fn = std::move(h.fn);
        unhold_front();
        fn(store::Appended{off, true});
      } else {
        // Another event with the same fingerprint, or one retention removed
        // (docs/operations.md: an id is remembered while its event is kept).
        h.ruled_out.push_back(off);
      }
      drain_held();
    });
  });
}

void Partition::confirm_timed_out(uint64_t gen) {
  if (!confirming_ || gen != confirm_gen_) return;
  confirming_ = false;
  metrics::ThreadMetrics::inc(metrics_.local().event_dedupe_confirm_timeouts);
  // None of them was placed: answering them all keeps their order (the client
  // retries them in it), where placing those behind would put them before the first.
  std::deque<Held> held;
  held.swap(held_);
  metrics_.local().event_dedupe_held.fetch_sub(static_cast<int64_t>(held.size()),
                                               std::memory_order_relaxed);
  for (auto& h : held) {
    h.fn(store::AppendOutcome{Error{ErrorCode::kUnavailable, "store did not answer in time", 1000}});
  }
}

void Partition::drain_held() {
  StoreBatch batch;
  while (!held_.empty() && !confirming_) {
    Held& h = held_.front();
    uint64_t off = 0;
    if (!log_.ready()) {
      // The log failed meanwhile: answered as its appends in flight were.
      LandingFn fn = std::move(h.fn);
      unhold_front();
      fn(store::AppendOutcome{Error{ErrorCode::kUnavailable, "store unavailable", 1000}});
    } else if (place(h.from, h.e, h.now_ms, h.fn, batch, h.ruled_out, off)) {
      unhold_front();
    } else {
      confirm(off);
    }
  }
  // In offset order, as placed; after every append placed before the hold.
  if (!batch.empty()) store_.append_many(std::move(batch));
}

void Partition::refill_window(std::vector<store::DedupeMark>& ids) {
  window_.clear();
  std::sort(ids.begin(), ids.end(), [](const auto& a, const auto& b) { return a.seq < b.seq; });
  for (const auto& e : ids) window_.insert(e.fp, e.seq, e.ts_ms);
  std::vector<store::DedupeMark>().swap(ids);
}

void Partition::on_appended(store::AppendOutcome out) {
  auto done = log_.complete(std::move(out));
  Pending& f = done.pending;
  switch (done.kind) {
    case Log::Completion::kCommitted: {
      const uint64_t off = done.outcome->seq;
      if (observer_) observer_(CommittedEvent{p_, off, f.type, f.body});
      push_recent(off, std::move(f.item));
      f.done(done.outcome);
      if (!done.waiters.empty()) {
        const auto again = done.for_waiters();
        for (auto& w : done.waiters) w(again);
      }
      if (on_committed_) on_committed_(off);
      return;
    }
    case Log::Completion::kAssigned:
      f.done(done.outcome);
      f.stored.seq = done.outcome->seq;
      return log_.take(f.stored.seq, std::move(f.stored));
    case Log::Completion::kAnswered:
      // A failure (the topic recovers this partition once its appends are
      // answered), or a duplicate the store found (delivered, or coming, as its
      // first append). A shared store's failure undoes nothing: the script did
      // not run, or its answer was lost and the event arrives like any other.
      // Server numbering: the failed offset is given again, not its id.
      if (!f.key.empty()) window_.erase(window_.fingerprint(f.key), f.off);
      f.done(done.outcome);
      if (!done.waiters.empty()) {
        const auto again = done.for_waiters();
        for (auto& w : done.waiters) w(again);
      }
      return;
  }
}

void Partition::on_feed(store::StoredMessage m) { log_.on_feed(m); }

void Partition::on_resync() { log_.on_resync(); }

void Partition::follow(const seqlog::Options& opts) {
  Log::FollowHooks hooks;
  hooks.release = [this](uint64_t, store::StoredMessage& m, bool next) {
    if (next) commit_stored(m);
  };
  hooks.from_store = [](store::StoredMessage& m) { return std::move(m); };
  hooks.passed_over = [this](uint64_t from, uint64_t to) {
    spdlog::warn("events: {}: offsets {}..{} are no longer in the store; passed over", id_.channel,
                 from, to);
    recent_.clear();
    recent_bytes_ = 0;
  };
  log_.follow(loops_, loop_, store_, id_, opts, std::move(hooks));
}

void Partition::push_recent(uint64_t off, std::string item) {
  recent_bytes_ += item.size();
  recent_.push_back(Recent{off, std::move(item), steady_ns()});
  while (recent_.size() > kRecentEvents || recent_bytes_ > kRecentBytes) {
    recent_bytes_ -= recent_.front().item.size();
    recent_.pop_front();
  }
}

void Partition::commit_stored(const store::StoredMessage& m) {
  if (observer_) {
    // The stored body is {"key","type","body"} (stored_body above): our own
    // text, but read back from the store: parsed defensively.
    thread_local simdjson::dom::parser parser;
    simdjson::dom::element root, body;
    std::string_view type;
    if (!parser.parse(m.body.data(), m.body.size()).get(root) && !root["type"].get_string().get(type) &&
        !root["body"].get(body)) {
      const std::string type_copy(type);
      const std::string text = simdjson::minify(body);
      observer_(CommittedEvent{p_, m.seq, type_copy, text});
    }
  }
  push_recent(m.seq, encode_item(m.seq, m.ts_ms, m.from, m.id, m.body));
  if (on_committed_) on_committed_(m.seq);
}

uint64_t Partition::open_cursor(std::weak_ptr<EventSink> sink, uint64_t next,
                                std::string group) {
  const uint64_t id = next_cursor_++;
  cursors_.emplace(id, Cursor{std::move(sink), next, std::move(group), false});
  return id;
}

void Partition::close_cursor(uint64_t id) { cursors_.erase(id); }

void Partition::pump() {
  for (auto it = cursors_.begin(); it != cursors_.end();) {
    if (it->second.sink.expired()) {
      it = cursors_.erase(it);
      continue;
    }
    pump_one(it->first, it->second);
    ++it;
  }
}

void Partition::pump_now(uint64_t id, Cursor& c) {
  runtime::TailScope pass;
  pump_one(id, c);
}

void Partition::begin_frame(std::string& f, const Cursor& c) const {
  JsonWriter w(f);
  w.begin_object().field("op", "events").field("topic", topic_).field_unum("p", p_);
  if (!c.group.empty()) w.field("group", c.group);
  f += ",\"evs\":[";
}

void Partition::pump_one(uint64_t id, Cursor& c) {
  if (c.paced || c.next > log_.committed()) return;
  if (recent_.empty() || recent_.front().off > c.next) return read_page(id, c);
  auto sink = c.sink.lock();
  if (!sink) return;
  // From the ring: every committed event the cursor has not had, in frames.
  std::vector<std::string> frames;
  std::vector<int64_t> oldest;  // when each frame's oldest event was committed
  size_t i = static_cast<size_t>(c.next - recent_.front().off);
  while (i < recent_.size()) {
    std::string frame;
    begin_frame(frame, c);
    const int64_t oldest_ns = recent_[i].committed_ns;
    size_t k = 0, bytes = 0;
    for (; i < recent_.size() && k < kFrameEvents && bytes < kFrameBytes; ++i, ++k) {
      if (k) frame.push_back(',');
      frame += recent_[i].item;
      bytes += recent_[i].item.size();
    }
    frame += "]}";
    c.next = recent_[i - 1].off + 1;
    frames.push_back(std::move(frame));
    oldest.push_back(oldest_ns);
  }
  if (frames.empty()) return;
  // Through the topic's outbox, in order: frames reach the connection in offset
  // order, corked (EventSink::deliver_event_frames): one write for the frames
  // and replies a task on that loop has for it.
  out_->to(sink->loop(), [sink, frames = std::move(frames), oldest = std::move(oldest),
                          &metrics = metrics_]() mutable {
    sink->deliver_event_frames(std::move(frames));
    const int64_t now = steady_ns();
    for (int64_t t : oldest) metrics.local().observe(metrics::Stage::kEventDispatch, now - t);
  });
}

void Partition::read_page(uint64_t id, Cursor& c) {
  // Behind the ring: one page from the store; the next once the client has
  // written this one out.
  c.paced = true;
  const uint64_t from = c.next;
  const uint64_t cut = log_.committed();
  const auto n = static_cast<uint32_t>(std::min<uint64_t>(kReadPage, cut - from + 1));
  store_.read_after(id_, from - 1, n, [this, id, from, cut](Result<std::vector<store::StoredMessage>> r) {
    loops_.run_on(loop_, [this, id, from, cut, r = std::move(r)]() mutable {
      auto it = cursors_.find(id);
      if (it == cursors_.end() || it->second.next != from) return;  // closed or replaced
      Cursor& c = it->second;
      auto sink = c.sink.lock();
      if (!sink) {
        cursors_.erase(it);
        return;
      }
      if (!r || r->empty() || r->front().seq != from) {
        // Trimmed under the reader, or the store failed: it cannot go on
        // without a gap. It retries from what the store holds now after a pause.
        if (!r || r->empty()) {
          // Failed, or nothing held from `from` on yet (after a loss the last
          // committed offset may be a skipped one): again after a pause, not in
          // a loop. c.paced stays set until the retry.
          auto t = std::make_shared<boost::asio::steady_timer>(loops_.loop(loop_),
                                                               std::chrono::milliseconds(200));
          t->async_wait([this, id, from, t](const boost::system::error_code&) {
            auto again = cursors_.find(id);
            if (again == cursors_.end() || again->second.next != from) return;
            again->second.paced = false;
            pump_now(id, again->second);
          });
          return;
        }
        c.paced = false;
        c.next = std::max(c.next, earliest());
        // Nothing is held from `from` up to the first event the store has: trimmed,
        // or offsets a start after a data loss skipped (the partition continues
        // above the store's ceiling). Without this a reader stayed at the skipped
        // offsets for good, reading the same page again and again (issue 26).
        if (r->front().seq > c.next && r->front().seq <= cut) c.next = r->front().seq;
        return pump_now(id, c);
      }
      std::string frame;
      begin_frame(frame, c);
      size_t k = 0;
      for (auto& m : *r) {
        // A page is bounded by bytes too: what is left is read again next time.
        // Above c.next only past offsets skipped after a data loss: nothing is
        // held between (trims take the oldest only).
        if (m.seq > cut || m.seq < c.next || frame.size() > kFrameBytes) break;
        if (k++) frame.push_back(',');
        frame += encode_item(m.seq, m.ts_ms, m.from, m.id, m.body);
        c.next = m.seq + 1;
      }
      frame += "]}";
      out_->to(sink->loop(), [this, sink, id, frame = std::move(frame)]() mutable {
        sink->deliver_event_frame(std::move(frame), [this, id] {
          loops_.run_on(loop_, [this, id] {
            auto again = cursors_.find(id);
            if (again == cursors_.end()) return;
            again->second.paced = false;
            pump_now(id, again->second);
          });
        });
      });
    });
  });
}

}  // namespace parley::events
