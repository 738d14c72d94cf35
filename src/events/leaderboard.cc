#include "events/leaderboard.h"

#include <simdjson.h>

#include <charconv>
#include <cmath>

#include "common/check.h"
#include "common/clock.h"
#include "common/json_writer.h"
#include "events/board_channel.h"
#include "protocol/encoder.h"

namespace parley::events {

namespace {

Agg agg_of(const std::string& s) {
  if (s == "max") return Agg::kMax;
  if (s == "min") return Agg::kMin;
  if (s == "last") return Agg::kLast;
  return Agg::kSum;
}

// A round value as a string: strings as they are, numbers as their shortest
// decimal form (PROTOCOL.md: numeric rounds become strings); nullopt otherwise.
std::optional<std::string> round_text(simdjson::dom::element v) {
  switch (v.type()) {
    case simdjson::dom::element_type::STRING: {
      std::string_view s = v.get_string().value_unsafe();
      if (s.empty()) return std::nullopt;
      return std::string(s);
    }
    case simdjson::dom::element_type::INT64: return std::to_string(v.get_int64().value_unsafe());
    case simdjson::dom::element_type::UINT64: return std::to_string(v.get_uint64().value_unsafe());
    case simdjson::dom::element_type::DOUBLE: {
      const double d = v.get_double().value_unsafe();
      if (!std::isfinite(d)) return std::nullopt;
      char buf[32];
      auto [end, ec] = std::to_chars(buf, buf + sizeof buf, d);
      if (ec != std::errc()) return std::nullopt;
      return std::string(buf, end);
    }
    default: return std::nullopt;
  }
}

std::vector<protocol::RankView> views(const std::vector<BoardEntry>& entries) {
  std::vector<protocol::RankView> out;
  out.reserve(entries.size());
  for (const auto& e : entries) out.push_back({e.member, e.score, e.rank});
  return out;
}

}  // namespace

Leaderboard::Round::Round(const LeaderboardConfig& cfg)
    : board(std::make_unique<OrderBoard>(agg_of(cfg.agg), cfg.order != "asc")) {}

Leaderboard::Leaderboard(unsigned loop, runtime::LoopGroup& loops, std::string name,
                         const LeaderboardConfig& cfg, metrics::Metrics& metrics)
    : loop_(loop),
      loops_(loops),
      name_(std::move(name)),
      cfg_(cfg),
      timer_(loops.loop(loop)),
      metrics_(metrics) {
  next_push_ = std::chrono::steady_clock::now();
  arm();
}

Leaderboard::~Leaderboard() = default;

void Leaderboard::on_event(std::string_view type, std::string_view body) {
  if (type != cfg_.type) return;
  if (rebuilding_) {
    held_.emplace_back(std::string(type), std::string(body));
    return;
  }
  apply(type, body);
}

void Leaderboard::apply(std::string_view type, std::string_view body) {
  if (type != cfg_.type) return;
  // The topic's own bytes (validated JSON when emitted, or read back from the
  // store): parsed defensively all the same; anything unusable is ignored.
  thread_local simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (parser.parse(body.data(), body.size()).get(root)) return;
  simdjson::dom::object obj;
  if (root.get_object().get(obj)) return;
  std::string_view member;
  if (obj[cfg_.member].get_string().get(member) || member.empty()) return;
  simdjson::dom::element sv;
  if (obj[cfg_.score].get(sv)) return;
  double score = 0;
  if (sv.is_int64()) {
    score = static_cast<double>(sv.get_int64().value_unsafe());
  } else if (sv.is_uint64()) {
    score = static_cast<double>(sv.get_uint64().value_unsafe());
  } else if (sv.get_double().get(score)) {
    return;  // not a number
  }
  if (!std::isfinite(score)) return;
  std::string round_key;
  if (has_rounds()) {
    simdjson::dom::element rv;
    if (obj[cfg_.round].get(rv)) return;
    auto r = round_text(rv);
    if (!r) return;
    round_key = std::move(*r);
  }
  Round& r = round(round_key);
  if (r.board->apply(member, score)) {
    r.changed = true;
    r.touched = ++touches_;
  }
}

Leaderboard::Round* Leaderboard::find_round(const std::string& key) {
  auto it = rounds_.find(key);
  return it == rounds_.end() ? nullptr : &it->second;
}

Leaderboard::Round& Leaderboard::round(const std::string& key) {
  if (Round* r = find_round(key)) return *r;
  if (rounds_.size() >= kMaxRounds) {
    auto oldest = rounds_.begin();
    for (auto it = rounds_.begin(); it != rounds_.end(); ++it) {
      if (it->second.touched < oldest->second.touched) oldest = it;
    }
    rounds_.erase(oldest);
  }
  return rounds_.emplace(key, Round(cfg_)).first->second;
}

void Leaderboard::write_snapshot(std::string& out) const {
  out += '[';
  bool first_round = true;
  for (const auto& [key, r] : rounds_) {
    if (!first_round) out += ',';
    first_round = false;
    JsonWriter w(out);
    w.begin_object().field("round", key).field_unum("touched", r.touched).key("e");
    out += '[';
    bool first = true;
    for (const auto& e : r.board->top(r.board->size())) {
      if (!first) out += ',';
      first = false;
      out += '[';
      append_json_string(out, e.member);
      out += ',';
      // Shortest form that reads back to the same double: a restored board
      // ranks exactly as the one written.
      char buf[32];
      auto [end, ec] = std::to_chars(buf, buf + sizeof buf, e.score);
      out.append(buf, ec == std::errc() ? end : buf);
      out += ']';
    }
    out += "]}";
  }
  out += ']';
}

bool Leaderboard::restore(simdjson::dom::element rounds) {
  PARLEY_CHECK(rebuilding_);
  rounds_.clear();
  simdjson::dom::array arr;
  if (rounds.get_array().get(arr)) return false;
  for (auto rv : arr) {
    std::string_view key;
    uint64_t touched = 0;
    simdjson::dom::array entries;
    if (rv["round"].get_string().get(key) || rv["touched"].get_uint64().get(touched) ||
        rv["e"].get_array().get(entries) || (!has_rounds() && !key.empty())) {
      rounds_.clear();
      return false;
    }
    Round& r = round(std::string(key));
    r.touched = touched;
    touches_ = std::max(touches_, touched);
    for (auto e : entries) {
      std::string_view member;
      double score = 0;
      simdjson::dom::element sv;
      if (e.at(0).get_string().get(member) || e.at(1).get(sv)) continue;
      if (sv.is_int64()) {
        score = static_cast<double>(sv.get_int64().value_unsafe());
      } else if (sv.is_uint64()) {
        score = static_cast<double>(sv.get_uint64().value_unsafe());
      } else if (sv.get_double().get(score)) {
        continue;
      }
      // On an empty board every aggregation's first value is the score itself.
      r.board->apply(member, score);
    }
  }
  return true;
}

void Leaderboard::begin_rebuild() { rebuilding_ = true; }

void Leaderboard::finish_rebuild() {
  rebuilding_ = false;
  auto held = std::move(held_);
  held_.clear();
  for (const auto& [type, body] : held) apply(type, body);
  auto ranks = std::move(held_ranks_);
  held_ranks_.clear();
  for (auto& r : ranks) rank(std::move(r));
}

void Leaderboard::rank(RankRequest req) {
  if (rebuilding_) {
    held_ranks_.push_back(std::move(req));
    return;
  }
  auto answer = [this, &req](Status st, std::vector<RankEntry> top,
                             std::vector<RankEntry> entries) {
    loops_.run_on(req.reply_loop, [done = std::move(req.done), st = std::move(st),
                                   top = std::move(top), entries = std::move(entries)]() mutable {
      done(std::move(st), std::move(top), std::move(entries));
    });
  };
  if (has_rounds() && !req.round) {
    return answer(Error{ErrorCode::kBadRequest, "this board has rounds: round is required"}, {}, {});
  }
  const Round* r = find_round(has_rounds() ? *req.round : std::string());
  std::vector<RankEntry> top, entries;
  auto copy = [](const std::vector<BoardEntry>& in, std::vector<RankEntry>& out) {
    for (const auto& e : in) out.push_back({std::string(e.member), e.score, e.rank});
  };
  if (r) {
    if (req.top > 0) copy(r->board->top(req.top), top);
    if (!req.member.empty()) copy(r->board->around(req.member, req.around), entries);
  }
  answer(Status::ok(), std::move(top), std::move(entries));
}

void Leaderboard::watch(const std::string& round, std::weak_ptr<EventSink> sink,
                        uint64_t conn, std::string user) {
  watchers_[round][conn] = Watcher{std::move(sink), std::move(user), true};
}

void Leaderboard::unwatch(const std::string& round, uint64_t conn) {
  auto it = watchers_.find(round);
  if (it == watchers_.end()) return;
  it->second.erase(conn);
  if (it->second.empty()) watchers_.erase(it);
}

void Leaderboard::arm() {
  // On a fixed grid (no drift): each push is due interval_ms after the previous
  // one was due; after a stall the grid restarts from now.
  const auto interval = std::chrono::milliseconds(cfg_.interval_ms);
  const auto now = std::chrono::steady_clock::now();
  next_push_ += interval;
  if (next_push_ < now) next_push_ = now + interval;
  timer_.expires_at(next_push_);
  timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec) return;
    push();
    arm();
  });
}

void Leaderboard::push() {
  if (rebuilding_) return;
  ++pushes_;
  const int64_t start = steady_ns();
  for (auto wit = watchers_.begin(); wit != watchers_.end();) {
    Round* r = find_round(wit->first);
    push_round(wit->first, r, wit->second);
    if (wit->second.empty()) {
      wit = watchers_.erase(wit);
    } else {
      ++wit;
    }
  }
  for (auto& [key, r] : rounds_) r.changed = false;
  metrics_.local().observe(metrics::Stage::kLeaderboard, steady_ns() - start);
}

void Leaderboard::push_round(const std::string& key, const Round* r,
                             std::map<uint64_t, Watcher>& ws) {
  const bool changed = r && r->changed;
  bool anyone = changed;
  for (const auto& [conn, w] : ws) anyone = anyone || w.fresh;
  if (!anyone) return;
  // Encoded once per round; each watcher's frame adds its own `me`. A round
  // with no event yet is an empty board.
  std::string head;
  {
    JsonWriter w(head);
    const std::string ch = board_channel(name_, key);
    w.begin_object().field("op", "board").field("ch", ch).field("board", name_);
    if (has_rounds()) w.field("round", key);
    w.field_num("ts", wall_ms()).key("top");
    if (r) {
      protocol::append_rank_list(head, views(r->board->top(cfg_.top)));
    } else {
      head += "[]";
    }
  }
  for (auto it = ws.begin(); it != ws.end();) {
    Watcher& w = it->second;
    auto sink = w.sink.lock();
    if (!sink) {
      it = ws.erase(it);
      continue;
    }
    ++it;
    const bool send = changed || w.fresh;
    w.fresh = false;
    if (!send) continue;
    std::string frame = head;
    if (r) {
      if (auto me = r->board->find(w.user)) {
        frame += ",\"me\":";
        protocol::append_rank_entry(frame, {me->member, me->score, me->rank});
      }
    }
    frame.push_back('}');
    loops_.run_on(sink->loop(), [sink, frame = std::move(frame)]() mutable {
      sink->deliver_event_frame(std::move(frame), nullptr);
    });
  }
}

}  // namespace parley::events
