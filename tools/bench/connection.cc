#include "connection.h"

#include <algorithm>

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdlib>
#include <cstring>

#include <boost/asio/write.hpp>
#include <fmt/format.h>

#include "msgpack_wire.h"
#include "token.h"
#include "worker.h"
#include "ws_codec.h"

#ifndef IP_BIND_ADDRESS_NO_PORT
#define IP_BIND_ADDRESS_NO_PORT 24
#endif

namespace bench {

namespace asio = boost::asio;
using asio::ip::tcp;

namespace {
constexpr size_t kPad = simdjson::SIMDJSON_PADDING;
constexpr size_t kMaxHandshake = 16384;
}  // namespace

Connection::Connection(Worker& w, uint32_t gid, std::vector<uint32_t> channels)
    : w_(w), gid_(gid), sock_(w.io()), pending_(size_t(w.opts().max_inflight)),
      rng_(gid * 2654435761u + 12345u) {
  for (uint32_t ch : channels) {
    Membership m;
    m.chan = ch;
    m.st = Membership::St::kJoining;
    members_.push_back(std::move(m));
  }
}

uint32_t Connection::next_random() {
  rng_ ^= rng_ << 13;
  rng_ ^= rng_ >> 17;
  rng_ ^= rng_ << 5;
  return rng_;
}

void Connection::set_state(St s) {
  st_ = s;
  state_since_ns_ = now_ns();
}

void Connection::connect() {
  boost::system::error_code ec;
  if (sock_.is_open()) sock_.close(ec);
  ++gen_;
  partial_.clear();
  frag_.clear();
  out_.clear();
  writing_buf_ = std::string();
  writing_ = reading_ = false;
  mp_ = false;  // a new connection starts in JSON (TCP) or negotiates again (WebSocket)
  streams_.clear();
  ++w_.counters().conn_attempts;
  set_state(St::kConnecting);
  sock_.open(tcp::v4(), ec);
  if (ec) return fail("socket");
  // Let connect() choose the port for the whole 4-tuple: a plain bind(addr, 0)
  // would cap each source address at ~28k sockets whatever the destination.
  int one = 1;
  ::setsockopt(sock_.native_handle(), IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof one);
  asio::ip::address src;
  if (w_.source_address(gid_, src)) {
    sock_.bind(tcp::endpoint(src, 0), ec);
    if (ec) return fail("bind");
  }
  sock_.async_connect(w_.endpoint(), [this, gen = gen_](boost::system::error_code ec) {
    if (gen != gen_) return;
    if (ec) return fail("connect");
    sock_.set_option(tcp::no_delay(true), ec);
    sock_.non_blocking(true, ec);
    start_session();
  });
}

void Connection::start_session() {
  if (w_.opts().transport == "ws") {
    char raw[16];
    for (int i = 0; i < 16; i += 4) {
      uint32_t r = next_random();
      std::memcpy(raw + i, &r, 4);
    }
    ws_key_ = base64(std::string_view(raw, 16));
    set_state(St::kUpgrading);
    out_ += ws::handshake_request(w_.host_header(), w_.opts().ws_path, ws_key_,
                                  w_.opts().encoding == "msgpack" ? "parley.v1.msgpack" : "");
    flush();
  } else {
    send_hello();
  }
  arm_read();
}

void Connection::send_hello() {
  set_state(St::kHello);
  std::string& s = w_.scratch();
  s.clear();
  const Options& o = w_.opts();
  fmt::format_to(std::back_inserter(s), R"({{"op":"hello","v":1,"token":"{}","rid":0{}{}}})",
                 w_.token_for(gid_),
                 o.encoding == "msgpack" && o.transport == "tcp" ? R"(,"enc":"msgpack")" : "",
                 o.batched_deltas ? R"(,"caps":["state_delta","state_delta_batch"])"
                 : o.deltas       ? R"(,"caps":["state_delta"])"
                                  : "");
  send_json(s);
}

void Connection::arm_read() {
  if (reading_ || st_ == St::kClosed) return;
  reading_ = true;
  // A read op into the connection's small buffer rather than async_wait: Asio
  // re-registers every wait with an epoll_ctl (a fifth of the generator's CPU at
  // 10,000 connections), while a read op costs at most a speculative recv.
  sock_.async_read_some(asio::buffer(first_),
                        [this, gen = gen_](boost::system::error_code ec, size_t n) {
                          if (gen != gen_) return;
                          reading_ = false;
                          if (ec) return fail(ec == asio::error::eof ? "closed by server" : "read");
                          on_read(n);
                        });
}

void Connection::on_read(size_t first) {
  std::vector<char>& buf = w_.read_buffer();
  size_t have = partial_.size();
  // A frame bigger than the shared buffer (a history page) grows it; it is never
  // shrunk, one worker holds one.
  if (have * 2 + 65536 > buf.size()) buf.resize(have * 2 + 65536 + kPad);
  size_t cap = buf.size() - kPad;
  std::memcpy(buf.data(), partial_.data(), have);
  std::memcpy(buf.data() + have, first_.data(), first);
  size_t n = first;
  if (first == first_.size()) {  // the socket may hold more: take it now
    boost::system::error_code ec;
    n += sock_.read_some(asio::buffer(buf.data() + have + n, cap - have - n), ec);
    if (ec && ec != asio::error::would_block && ec != asio::error::try_again)
      return fail(ec == asio::error::eof ? "closed by server" : "read");
  }
  partial_.clear();
  w_.counters().bytes_in += n;
  batch_now_ = now_ns();
  size_t used = consume(buf.data(), have + n, buf.size());
  if (st_ == St::kClosed) return;
  partial_.assign(buf.data() + used, have + n - used);
  arm_read();
}

size_t Connection::consume(char* buf, size_t len, size_t alloc) {
  size_t pos = 0;
  if (st_ == St::kUpgrading) {
    std::string_view all(buf, len);
    size_t end = all.find("\r\n\r\n");
    if (end == std::string_view::npos) {
      if (len > kMaxHandshake) fail("handshake too long");
      return 0;
    }
    std::string why = ws::check_handshake_response(all.substr(0, end + 4), ws_key_);
    if (!why.empty()) {
      if (w_.counters().conn_failed < 3) fmt::print(stderr, "ws handshake: {}\n", why);
      fail("handshake");
      return len;
    }
    pos = end + 4;
    if (w_.opts().encoding == "msgpack") {
      if (ws::selected_protocol(all.substr(0, end + 4)) != "parley.v1.msgpack") {
        fail("the server did not select parley.v1.msgpack");
        return len;
      }
      mp_ = true;
    }
    send_hello();
  }
  const bool ws = w_.opts().transport == "ws";
  while (pos < len && st_ != St::kClosed) {
    if (!ws) {
      if (len - pos < 4) break;
      auto* b = reinterpret_cast<const uint8_t*>(buf + pos);
      size_t flen = (size_t(b[0]) << 24) | (size_t(b[1]) << 16) | (size_t(b[2]) << 8) | b[3];
      if (len - pos - 4 < flen) break;
      handle_payload(buf + pos + 4, flen, alloc - pos - 4);
      pos += 4 + flen;
      continue;
    }
    ws::FrameHeader h;
    if (!ws::parse_header(buf + pos, len - pos, h)) break;
    size_t total = h.header_len + h.payload_len;
    if (len - pos < total) break;
    char* p = buf + pos + h.header_len;
    size_t plen = h.payload_len;
    if (h.masked) ws::apply_mask(p, plen, h.mask);
    switch (h.op) {
      case ws::kText:
      case ws::kBinary:
        if (h.fin) {
          handle_payload(p, plen, alloc - size_t(p - buf));
        } else {
          frag_.assign(p, plen);
        }
        break;
      case ws::kCont:
        frag_.append(p, plen);
        if (h.fin) {
          size_t n = frag_.size();
          frag_.resize(n + kPad);
          handle_payload(frag_.data(), n, frag_.size());
          frag_.clear();
        }
        break;
      case ws::kPing:
        send_control(ws::kPong, std::string_view(p, plen));
        break;
      case ws::kClose:
        send_control(ws::kClose, std::string_view(p, plen < 2 ? plen : 2));
        fail("close frame");
        return pos + total;
      default:
        break;
    }
    pos += total;
  }
  return pos;
}

void Connection::handle_payload(char* data, size_t len, size_t capacity) {
  Counters& c = w_.counters();
  ++c.frames_in;
  const uint64_t states_before = c.state_deliveries;
  auto sink = [this](const Event& ev) { on_event(ev); };
  const bool ok = mp_ ? w_.mp_reader().read(data, len, sink) : w_.reader().read(data, len, capacity, sink);
  if (!ok) ++c.bad_frames;
  if (c.state_deliveries != states_before) note_tick();
}

// A server that delivers on a tick sends each member one batch per tick, so the
// reads that bring states are that tick as this client sees it: the interval
// between two of them is the tick plus the server's and the network's jitter. Its
// distance from the nearest whole number of ticks (at least one) is the deviation;
// a tick with nothing for this member shows as 2 ticks, not as a deviation of one.
void Connection::note_tick() {
  if (batch_now_ == last_tick_ns_) return;  // the same read: the same tick
  const int64_t tick = int64_t(w_.opts().tick_ms * 1e6);
  if (last_tick_ns_ > 0 && tick > 0) {
    const int64_t interval = batch_now_ - last_tick_ns_;
    const int64_t k = std::max<int64_t>(1, (interval + tick / 2) / tick);
    w_.record_latency(&Latencies::tick_interval, interval);
    w_.record_latency(&Latencies::tick_dev, std::abs(interval - k * tick));
  }
  last_tick_ns_ = batch_now_;
}

void Connection::on_event(const Event& ev) {
  Counters& c = w_.counters();
  switch (ev.op) {
    case Op::kMsg: return on_msg(ev);
    case Op::kState:
    case Op::kSd:
      return on_state(ev);
    case Op::kAck: return on_ack(ev);
    case Op::kError: return on_error(ev);
    case Op::kPresence: ++c.presence_frames; return;
    case Op::kJoined: return on_joined(ev);
    case Op::kLeft: return on_left(ev);
    case Op::kWelcome:
      if (st_ != St::kHello) return;
      // TCP: the welcome is JSON, everything after it MessagePack.
      if (w_.opts().encoding == "msgpack") mp_ = true;
      set_state(St::kJoining);
      joins_outstanding_ = 0;
      for (auto& m : members_) {
        if (m.st == Membership::St::kNone) continue;
        send_join(m, m.st == Membership::St::kRejoining);
        ++joins_outstanding_;
      }
      if (joins_outstanding_ == 0) on_all_joined();
      return;
    case Op::kPong: ++c.pongs; return;
    case Op::kHistoryMsg: return w_.on_history_msg(ev);
    case Op::kHistory: return w_.on_history_page(ev);
    case Op::kBye: ++c.byes; return;
    default: return;
  }
}

void Connection::on_state(const Event& ev) {
  Counters& c = w_.counters();
  ++c.state_deliveries;
  int64_t sent_ns = ev.sent_ns;
  const bool ideal = w_.opts().ideal;
  uint64_t ideal_bytes = 0;
  uint64_t* ideal_out = ideal ? &ideal_bytes : nullptr;
  const bool mp = mp_;
  if (ev.op == Op::kSd) {
    ++c.sd_deliveries;
    const bool applied =
        mp ? ev.mp_body && streams_.apply(ev.sid, *ev.mp_body, ev.mp_unset, sent_ns, ideal_out, ev.mp_pos)
           : streams_.apply(ev.sid, ev.body, ev.unset, sent_ns, ideal_out, ev.pos);
    if (!applied) {
      if (++c.delta_errors <= 3) fmt::print(stderr, "state delta: sid {} could not be applied\n", ev.sid);
      return;
    }
  } else if (ev.sid) {
    const bool based = mp ? ev.mp_body && streams_.full(ev.sid, ev.from, *ev.mp_body, ideal_out, ev.mp_pos)
                          : streams_.full(ev.sid, ev.from, ev.body, ideal_out, ev.pos);
    if (!based) ++c.delta_errors;
  } else if (ideal) {
    if (mp && ev.mp_body) {
      ideal_bytes = streams_.observe(ev.from, ev.key, *ev.mp_body, ev.mp_pos);
    } else if (!mp) {
      ideal_bytes = streams_.observe(ev.from, ev.key, ev.body, ev.pos);
    }
  }
  c.ideal_bytes += ideal_bytes;
  if (sent_ns > 0) w_.record_latency(&Latencies::state, batch_now_ - sent_ns);
}

Membership* Connection::membership_for(std::string_view ch) {
  int64_t local = w_.local_channel(ch);
  if (local < 0) return nullptr;
  for (auto& m : members_)
    if (m.chan == uint32_t(local)) return &m;
  return nullptr;
}

void Connection::send_join(Membership& m, bool with_since) {
  std::string& s = w_.scratch();
  s.clear();
  const std::string& name = w_.channel(m.chan).name;
  if (with_since)
    fmt::format_to(std::back_inserter(s), R"({{"op":"join","rid":0,"ch":"{}","since":{}}})",
                   name, m.last_seq);
  else
    fmt::format_to(std::back_inserter(s), R"({{"op":"join","rid":0,"ch":"{}"}})", name);
  send_json(s);
}

void Connection::on_joined(const Event& ev) {
  Membership* m = membership_for(ev.ch);
  if (!m) return;
  Counters& c = w_.counters();
  ++c.joins;
  ChannelState& chan = w_.channel(m->chan);
  if (m->st == Membership::St::kRejoining) {
    // Reconnected with `since`: the stream goes on where it stopped, unless the
    // server no longer held everything, which is a documented outcome, not loss.
    if (!ev.recovered && ev.seq > m->last_seq) {
      ++c.unrecovered_joins;
      m->skip_until = ev.seq;
      m->last_seq = ev.seq;
      m->missing.clear();
      m->stayed = false;
    }
  } else if (m->st == Membership::St::kJoining) {
    chan.note_join(ev.seq);
    m->join_seq = m->last_seq = ev.seq;
    m->skip_until = 0;
    m->stayed = true;
  }
  m->st = Membership::St::kJoined;
  if (st_ == St::kJoining && --joins_outstanding_ <= 0) on_all_joined();
  // Interest areas: a member without a cell receives every state of the
  // channel (PROTOCOL.md "Interest areas"), so an avatar places itself as soon
  // as it is in, on the first join and on every re-join (a leave forgets the cell).
  if (w_.opts().aoi_cell > 0 && m == &members_[0] && send_state()) ++w_.counters().placements;
}

void Connection::on_all_joined() {
  set_state(St::kReady);
  Counters& c = w_.counters();
  if (!ever_ready_) {
    ever_ready_ = true;
    ++c.conn_ready;
  } else {
    ++c.reconnects;
  }
  reconnect_attempts_ = 0;
  resend_pending();
}

void Connection::on_left(const Event& ev) {
  Membership* m = membership_for(ev.ch);
  if (!m || m->st != Membership::St::kLeaving) return;
  // The segment that just ended is audited now: what it skipped never came.
  w_.counters().lost += m->missing.size();
  m->missing.clear();
  m->st = Membership::St::kJoining;
  send_join(*m, false);
}

void Connection::on_msg(const Event& ev) {
  Counters& c = w_.counters();
  Membership* m = membership_for(ev.ch);
  if (!m || m->st == Membership::St::kJoining || m->st == Membership::St::kNone) {
    ++c.stray_msgs;
    return;
  }
  if (ev.seq <= m->skip_until) return;
  ++c.deliveries;
  switch (m->receive(ev.seq)) {
    case Membership::Verdict::kDuplicate: ++c.duplicates; break;
    case Membership::Verdict::kReordered: ++c.reorders; break;
    case Membership::Verdict::kGap: ++c.gaps; break;
    default: break;
  }
  if (ev.id_ok && !w_.channel(m->chan).record_seen(ev.seq, ev.id)) ++c.mismatches;
  if (ev.sent_ns > 0) w_.record_latency(&Latencies::delivery, batch_now_ - ev.sent_ns);
}

void Connection::send_pub(uint64_t rid, const PendingPub& p) {
  std::string& s = w_.scratch();
  s.clear();
  fmt::format_to(std::back_inserter(s), R"({{"op":"pub","rid":{},"ch":"{}","id":"{}","body":{{"t":{},"p":"{}"}}}})",
                 rid, w_.channel(members_[p.member].chan).name, p.id, p.first_ns,
                 w_.padding());
  send_json(s);
  ++w_.counters().pub_sent;
}

bool Connection::publish(size_t member, int64_t now) {
  Counters& c = w_.counters();
  if (st_ != St::kReady || member >= members_.size() ||
      members_[member].st != Membership::St::kJoined) {
    ++c.pub_blocked;
    return false;
  }
  uint64_t rid = next_rid_;
  PendingPub& p = pending_[rid & (pending_.size() - 1)];
  if (p.live) {
    ++c.pub_blocked;
    return false;
  }
  ++next_rid_;
  p.rid = rid;
  p.id = (uint64_t(gid_ + 1) << 24) | (next_msg_++ & 0xffffff);
  p.first_ns = now;
  p.member = uint32_t(member);
  p.attempts = 1;
  p.live = true;
  ++inflight_;
  ++c.pub_attempted;
  send_pub(rid, p);
  return true;
}

void Connection::on_ack(const Event& ev) {
  Counters& c = w_.counters();
  if (ev.rid < 1) return;
  PendingPub& p = pending_[uint64_t(ev.rid) & (pending_.size() - 1)];
  if (!p.live || p.rid != uint64_t(ev.rid)) {
    ++c.other_errors;  // an ack for nothing we sent
    return;
  }
  p.live = false;
  --inflight_;
  ++c.acked;
  if (ev.dup) ++c.dup_acks;
  if (ev.id_ok && ev.id != p.id) ++c.mismatches;
  w_.record_latency(&Latencies::ack, batch_now_ - p.first_ns);
  if (!w_.channel(members_[p.member].chan).record_ack(ev.seq, p.id)) ++c.mismatches;
}

void Connection::on_error(const Event& ev) {
  Counters& c = w_.counters();
  PendingPub* p = nullptr;
  if (ev.rid >= 1) {
    PendingPub& slot = pending_[uint64_t(ev.rid) & (pending_.size() - 1)];
    if (slot.live && slot.rid == uint64_t(ev.rid)) p = &slot;
  }
  if (!p) {
    ++c.other_errors;
    if (c.other_errors <= 3) fmt::print(stderr, "server error: {}\n", ev.code);
    return;
  }
  // The retryable rejections of PROTOCOL.md: unavailable is the store's (a Valkey
  // node unreachable, a slot moving), retried like the others and counted apart.
  bool rate = ev.code == "rate_limited", bp = ev.code == "backpressure";
  bool down = ev.code == "unavailable";
  if (!rate && !bp && !down) {
    ++c.pub_errors;
    if (c.pub_errors <= 3) fmt::print(stderr, "pub rejected: {}\n", ev.code);
    p->live = false;
    --inflight_;
    return;
  }
  ++(rate ? c.rate_limited : bp ? c.backpressure : c.unavailable);
  if (p->attempts >= w_.opts().retry_max) {
    ++c.gave_up;
    p->live = false;
    --inflight_;
    return;
  }
  // Retry after the server's hint with up to +50 % jitter, as a polite client would,
  // so that rejected clients do not come back in lockstep.
  int64_t wait_ms = ev.retry_ms > 0 ? ev.retry_ms : 100;
  int64_t jitter = int64_t(next_random() % 1000) * wait_ms / 2000;
  w_.schedule_retry(this, p->rid, now_ns() + (wait_ms + jitter) * 1'000'000);
}

void Connection::retry(uint64_t rid) {
  PendingPub& p = pending_[rid & (pending_.size() - 1)];
  if (!p.live || p.rid != rid || st_ != St::kReady) return;  // resent on reconnect
  ++p.attempts;
  send_pub(rid, p);
}

void Connection::resend_pending() {
  for (auto& p : pending_)
    if (p.live) send_pub(p.rid, p);
}

bool Connection::send_state() {
  if (st_ != St::kReady || members_.empty() || members_[0].st != Membership::St::kJoined)
    return false;
  std::string& s = w_.scratch();
  s.clear();
  ++state_counter_;
  const auto& o = w_.opts();
  if (o.aoi_cell > 0) {
    // Cells of ~aoi_neighbours / 9 avatars, in a square; each avatar stays in
    // its cell (moving within it), so every 3x3 neighbourhood keeps its share.
    const int cells = std::max(1, o.channel_size * 9 / o.aoi_neighbours);
    int side = 1;
    while (side * side < cells) ++side;
    const int ci = int(gid_ % uint32_t(cells));
    const double frac = double(state_counter_ % 8 + 1) / 10.0;
    fmt::format_to(std::back_inserter(s),
                   R"({{"op":"state","ch":"{}","key":"pos","pos":[{},{}],"body":{{"t":{},"x":{},"y":{}}}}})",
                   w_.channel(members_[0].chan).name, (ci % side + frac) * o.aoi_cell,
                   (ci / side + 0.5) * o.aoi_cell, now_ns(), state_counter_ % 1000, gid_ % 1000);
  } else {
    fmt::format_to(std::back_inserter(s),
                   R"({{"op":"state","ch":"{}","key":"pos","body":{{"t":{},"x":{},"y":{}}}}})",
                   w_.channel(members_[0].chan).name, now_ns(), state_counter_ % 1000,
                   gid_ % 1000);
  }
  send_json(s);
  ++w_.counters().state_sent;
  return true;
}

bool Connection::churn() {
  if (st_ != St::kReady || members_.empty() || members_[0].st != Membership::St::kJoined)
    return false;
  Membership& m = members_[0];
  m.st = Membership::St::kLeaving;
  m.stayed = false;
  std::string& s = w_.scratch();
  s.clear();
  fmt::format_to(std::back_inserter(s), R"({{"op":"leave","rid":0,"ch":"{}"}})",
                 w_.channel(m.chan).name);
  send_json(s);
  ++w_.counters().leaves;
  return true;
}

bool Connection::send_up() {
  if (st_ != St::kReady || members_.empty() || members_[0].st != Membership::St::kJoined)
    return false;
  std::string& s = w_.scratch();
  s.clear();
  fmt::format_to(std::back_inserter(s),
                 R"({{"op":"up","ch":"{}","body":{{"type":"move","x":{},"y":{}}}}})",
                 w_.channel(members_[0].chan).name, state_counter_ % 1000, gid_ % 1000);
  send_json(s);
  ++w_.counters().up_sent;
  return true;
}

void Connection::send_ping() {
  if (st_ != St::kReady) return;
  send_json(R"({"op":"ping","rid":0})");
}

void Connection::send_history(uint32_t chan, uint64_t after, int limit) {
  std::string& s = w_.scratch();
  s.clear();
  fmt::format_to(std::back_inserter(s),
                 R"({{"op":"history","rid":0,"ch":"{}","after":{},"limit":{}}})",
                 w_.channel(chan).name, after, limit);
  send_json(s);
}

void Connection::send_json(std::string_view json) {
  if (mp_) {
    thread_local std::string packed;
    packed.clear();
    if (!mpk::pack_json(json, packed)) return fail("a frame the bench wrote is not JSON");
    json = packed;
  }
  if (w_.opts().transport == "ws") {
    ws::append_frame(out_, mp_ ? ws::kBinary : ws::kText, json, next_random());
  } else {
    uint32_t n = uint32_t(json.size());
    char len[4] = {char(n >> 24), char(n >> 16), char(n >> 8), char(n)};
    out_.append(len, 4);
    out_.append(json);
  }
  flush();
}

void Connection::send_control(uint8_t opcode, std::string_view payload) {
  ws::append_frame(out_, ws::Opcode(opcode), payload, next_random());
  flush();
}

void Connection::flush() {
  if (writing_ || out_.empty() || st_ == St::kClosed || st_ == St::kConnecting) return;
  std::swap(out_, writing_buf_);
  writing_ = true;
  asio::async_write(sock_, asio::buffer(writing_buf_),
                    [this, gen = gen_](boost::system::error_code ec, size_t n) {
                      if (gen != gen_) return;
                      writing_ = false;
                      writing_buf_.clear();
                      if (ec) return fail("write");
                      w_.counters().bytes_out += n;
                      flush();
                    });
}

void Connection::on_timeout() { fail("timeout"); }

void Connection::close() {
  if (st_ == St::kClosed) return;
  boost::system::error_code ec;
  sock_.close(ec);
  ++gen_;
  st_ = St::kClosed;
}

void Connection::fail(const char* why) {
  if (st_ == St::kClosed) return;
  bool was_ready = st_ == St::kReady;
  close();
  if (w_.shutting_down()) return;
  Counters& c = w_.counters();
  if (was_ready) {
    ++c.disconnects;
    if (c.disconnects <= 3) fmt::print(stderr, "connection {} lost: {}\n", gid_, why);
  } else if (ever_ready_) {
    ++c.reconnect_failed;
  } else {
    ++c.conn_failed;
    if (c.conn_failed <= 3) fmt::print(stderr, "connection {} failed: {}\n", gid_, why);
  }
  for (auto& m : members_) {
    if (m.st == Membership::St::kJoined || m.st == Membership::St::kLeaving) {
      if (w_.opts().reconnect) {
        m.st = Membership::St::kRejoining;
      } else {
        c.lost += m.missing.size();
        m.missing.clear();
        m.stayed = false;
        m.st = Membership::St::kNone;
      }
    }
  }
  if (w_.opts().reconnect && ++reconnect_attempts_ <= 10)
    w_.schedule_reconnect(this, now_ns() + (500 + int64_t(next_random() % 1000)) * 1'000'000);
}

}  // namespace bench
