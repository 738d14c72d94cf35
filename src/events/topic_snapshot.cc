// A topic's board snapshots (topic.h): written on the topic's loop every
// snapshot_s while events come, read once when the boards are rebuilt.
//
// What a snapshot holds is exact: the boards apply every committed event on this
// loop as its partition commits it (in offset order), so at any moment of the loop
// a board includes exactly the events up to each partition's committed offset.
// A snapshot is taken at such a moment, never while the boards rebuild.
#include <spdlog/spdlog.h>

#include <simdjson.h>

#include "common/clock.h"
#include "common/json_writer.h"
#include "events/topic.h"

namespace parley::events {

void Topic::load_snapshot(std::function<void(std::vector<uint64_t> from)> then) {
  std::vector<uint64_t> none(parts_.size(), 0);
  if (cfg_.snapshot_s == 0) return then(std::move(none));
  store_.recover(snap_id_, wall_ms(), [this, then = std::move(then), none](
                                          Result<store::ChannelRecovery> rec) mutable {
    loops_.run_on(loop_, [this, then = std::move(then), none = std::move(none),
                          rec = std::move(rec)]() mutable {
      if (!rec) {
        spdlog::warn("events: {}/{}: board snapshots unreadable ({}); replaying the topic",
                     tenant_.id, name_, rec.error().msg);
        return then(std::move(none));
      }
      snap_known_ = true;
      snap_seq_ = rec->last_seq;
      if (snap_seq_ == 0) return then(std::move(none));
      store_.read_before(snap_id_, snap_seq_ + 1, 1, [this, then = std::move(then), none](auto r) mutable {
        loops_.run_on(loop_, [this, then = std::move(then), none = std::move(none),
                              r = std::move(r)]() mutable {
          std::vector<uint64_t> from = none;
          const int64_t start = steady_ns();
          if (r && !r->empty() && apply_snapshot(r->back().body, from)) {
            spdlog::info("events: {}/{}: boards loaded from snapshot {} ({} bytes, {} ms); replaying "
                         "the events after it",
                         tenant_.id, name_, r->back().seq, r->back().body.size(),
                         (steady_ns() - start) / 1'000'000);
          } else {
            spdlog::warn("events: {}/{}: the newest board snapshot is unusable; replaying the topic",
                         tenant_.id, name_);
            from = std::move(none);
          }
          then(std::move(from));
        });
      });
    });
  });
}

bool Topic::apply_snapshot(std::string_view body, std::vector<uint64_t>& from) {
  simdjson::dom::parser parser;  // not the loop's: a snapshot may be megabytes, once
  simdjson::dom::element root;
  simdjson::dom::array offs;
  simdjson::dom::object boards;
  uint64_t parts = 0;
  if (parser.parse(body.data(), body.size()).get(root) || root["parts"].get_uint64().get(parts) ||
      parts != partitions() || root["offs"].get_array().get(offs) || offs.size() != parts ||
      root["boards"].get_object().get(boards)) {
    return false;
  }
  std::vector<uint64_t> at;
  for (auto o : offs) {
    uint64_t off = 0;
    if (o.get_uint64().get(off)) return false;
    // A store that started after accepting data loss may hold less than the
    // snapshot counted: its events cannot be told apart, so the topic is replayed.
    // So is a snapshot past this node's recovery cut (another node's, on a
    // shared store): the boards already count the events after the cut.
    if (off > parts_[at.size()]->recovered_cut()) return false;
    at.push_back(off);
  }
  for (auto& b : boards_) {
    simdjson::dom::element rounds;
    // A board the snapshot does not know (added since) is rebuilt from the topic.
    if (boards[b->name()].get(rounds)) return false;
  }
  for (auto& b : boards_) {
    if (!b->restore(boards[b->name()].value_unsafe())) {
      for (auto& other : boards_) other->reset();
      return false;
    }
  }
  from = std::move(at);
  return true;
}

void Topic::arm_snapshot() {
  if (cfg_.snapshot_s == 0 || boards_.empty()) return;
  if (!snap_timer_) snap_timer_ = std::make_unique<boost::asio::steady_timer>(loops_.loop(loop_));
  snap_timer_->expires_after(std::chrono::seconds(cfg_.snapshot_s));
  snap_timer_->async_wait([this](const boost::system::error_code& ec) {
    if (!ec) take_snapshot();
  });
}

void Topic::take_snapshot() {
  const uint64_t committed = stats_->committed.load(std::memory_order_relaxed);
  bool rebuilding = false;
  for (const auto& b : boards_) rebuilding = rebuilding || b->rebuilding();
  if (committed == snap_committed_ || rebuilding || snap_writing_) return arm_snapshot();
  if (!snap_known_) {
    // After a failed write (or an unreadable channel at start) the channel's
    // last seq is asked again before the next append.
    snap_writing_ = true;
    store_.recover(snap_id_, wall_ms(), [this](Result<store::ChannelRecovery> rec) {
      loops_.run_on(loop_, [this, rec = std::move(rec)] {
        snap_writing_ = false;
        if (rec) {
          snap_known_ = true;
          snap_seq_ = rec.value().last_seq;
          return take_snapshot();
        }
        arm_snapshot();
      });
    });
    return;
  }
  const int64_t start = steady_ns();
  std::string body;
  {
    JsonWriter w(body);
    w.begin_object().field_num("v", 1).field_unum("parts", partitions()).key("offs").begin_array();
    for (const auto& p : parts_) w.unum(p->committed());
    w.end_array().key("boards").begin_object();
    for (const auto& b : boards_) {
      w.key(b->name());
      std::string rounds;
      b->write_snapshot(rounds);
      w.raw(rounds);
    }
    w.end_object().end_object();
  }
  const uint64_t seq = snap_seq_ + 1;
  const size_t bytes = body.size();
  snap_writing_ = true;
  store::AppendRequest req{snap_id_, store::StoredMessage{seq, wall_ms(), "server", "", std::move(body)},
                           2, 0, 0};
  store_.append(std::move(req), [this, committed, seq, bytes, start](store::AppendOutcome out) {
    loops_.run_on(loop_, [this, committed, seq, bytes, start, out = std::move(out)] {
      snap_writing_ = false;
      if (out) {
        snap_seq_ = out->seq ? out->seq : seq;
        snap_committed_ = committed;
        spdlog::debug("events: {}/{}: board snapshot {} written ({} bytes, {} ms)", tenant_.id, name_,
                      snap_seq_, bytes, (steady_ns() - start) / 1'000'000);
      } else {
        snap_known_ = false;
        spdlog::warn("events: {}/{}: board snapshot not written: {}", tenant_.id, name_,
                     out.error().msg);
      }
      arm_snapshot();
    });
  });
}

}  // namespace parley::events
