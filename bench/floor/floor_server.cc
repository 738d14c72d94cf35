// parley-floor: the cheapest server for the bench's adapter protocol
// (bench/README.md), so that `parley-bench compare ... --targets ...,floor`
// puts a number on the physical limit of the machine it runs on.
//
// One thread, one epoll, nothing else: each `msg` frame is encoded once (its
// WebSocket header included) and written to every member with one send() of
// its own; no batching, no timers, no store, no metrics, no auth. What a server
// cannot avoid for a delivery on this machine is that send(), and every server
// compared beside it pays at least that. Bytes a socket does not take are
// kept per connection and written on EPOLLOUT (never in the load's shapes).
//
// With TICK_MS > 0 it is the floor of a tick batcher instead: a connection's
// `msg` and `state` frames wait for the next multiple of TICK_MS and leave in
// one send() per connection per tick (acks and replies still go at once), so
// the number of sends is the fewest any server batching on that tick can make.
// It coalesces nothing: fewer bytes would not make fewer sends.
//
// With --io-uring (issue 9's "batch the sends of one iteration through
// io_uring") the same sends, one per delivery and per reply, are queued as
// IORING_OP_SEND entries while an epoll iteration runs and submitted with one
// io_uring_enter at its end. A frame lives until the last send of it completes.
// A connection's sends of one iteration are linked, so the kernel issues them in
// order, and MSG_WAITALL makes it finish a short send itself (polling the socket)
// before the next; bytes for a connection whose chain is still in flight wait in
// its queue until the chain completes. The mode names the ring's setup flags:
// defer (SINGLE_ISSUER | DEFER_TASKRUN, the default), coop (SINGLE_ISSUER |
// COOP_TASKRUN) or plain (none); no SQPOLL (a kernel thread spinning on a
// second core would not be a cost per delivery this machine can afford).
//
// Not a server to deploy: input is trusted beyond what keeps it from
// crashing (bounded buffers, JSON errors answered), as the peers are.
// Usage: parley-floor PORT [TICK_MS] [--io-uring[=defer|coop|plain] [--fixed-files]]
//        (listens on 127.0.0.1, WebSocket at any path)
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <simdjson.h>
#ifdef PARLEY_FLOOR_URING
#include <liburing.h>
#include <sys/eventfd.h>
#endif

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "../../tools/bench/ws_codec.h"

namespace {

constexpr size_t kMaxInput = 1 << 20;  // a connection's unparsed bytes
constexpr size_t kReadBytes = 64 * 1024;
constexpr size_t kMaxQueued = 1 << 16;  // io_uring mode: frames waiting on one connection
constexpr size_t kMaxChain = 64;        // io_uring mode: linked sends of one connection per submit

struct Room;

// io_uring mode: a frame shared by the sends of it still in flight or queued.
struct Buf {
  std::string bytes;
  uint32_t refs = 0;
};

struct Conn {
  int fd = -1;
  uint64_t id = 0;      // tells a reused fd's new connection from the old one
  std::vector<Buf*> q;  // io_uring mode: frames not yet submitted, in order
  uint32_t inflight = 0;  // io_uring mode: sends submitted, not yet completed
  bool touched = false;   // io_uring mode: on g_touched
  bool broken = false;    // io_uring mode: a send failed or the queue overflowed
  bool upgraded = false;
  bool out_armed = false;
  std::string in;       // bytes not yet parsed (handshake or a cut frame)
  std::string pending;  // bytes the socket did not take
  std::string batch;    // deliveries waiting for the tick (TICK_MS > 0)
  bool dirty = false;   // on g_dirty
  std::string user;
  std::string name;
  std::vector<Room*> rooms;
};

struct Room {
  uint64_t seq = 0;
  std::vector<Conn*> members;
};

int g_epoll = -1;
int g_tick_ms = 0;
std::vector<int> g_dirty;  // fds with a batch for the tick due at g_tick_due
int64_t g_tick_due = 0;     // steady-clock ms
std::unordered_map<std::string, Room> g_rooms;
std::unordered_map<int, std::unique_ptr<Conn>> g_conns;
uint64_t g_next_conn = 1;
simdjson::ondemand::parser g_parser;

// io_uring mode (0 = off: one send() per delivery, the floor as the issue defines it).
enum class Uring { kOff, kDefer, kCoop, kPlain };
Uring g_uring = Uring::kOff;
// --fixed-files: sockets in the ring's file table (index = fd), sends with
// IOSQE_FIXED_FILE: no file lookup and reference per send.
bool g_fixed = false;
unsigned kFixedFiles = 16384;  // fds at or above it are sent to unfixed
std::vector<Conn*> g_touched;  // connections with frames queued this iteration
#ifdef PARLEY_FLOOR_URING
io_uring g_ring;
struct Send {
  int fd;
  uint64_t id;
  Buf* buf;
};
std::vector<Send> g_sends;        // indexed by an SQE's user_data
std::vector<uint32_t> g_free_sends;
size_t g_inflight = 0;            // sends submitted and not completed, all connections
bool g_ring_watched = false;      // the ring signals g_ring_evfd
int g_ring_evfd = -1;             // in the epoll set; signalled only while watched
#endif

// io_uring mode: a tick batch leaves in its own string (it must live until its
// send completes); spent batches' strings come back here so that a connection's
// next batch reuses one, as the send() floor reuses its batch string.
std::vector<std::string> g_spare;
constexpr size_t kMaxSpare = 1 << 14;

void release(Buf* b) {
  if (--b->refs != 0) return;
  if (g_tick_ms > 0 && b->bytes.capacity() >= 256 && g_spare.size() < kMaxSpare) {
    b->bytes.clear();
    g_spare.push_back(std::move(b->bytes));
  }
  delete b;
}


void enqueue(Conn& c, Buf* b) {
  if (c.q.size() >= kMaxQueued) {
    c.broken = true;  // a peer that reads nothing; closed at the iteration's end
  } else {
    ++b->refs;
    c.q.push_back(b);
  }
  if (!c.touched) {
    c.touched = true;
    g_touched.push_back(&c);
  }
}

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}


void arm_out(Conn& c, bool on) {
  if (c.out_armed == on) return;
  c.out_armed = on;
  epoll_event ev{};
  ev.events = on ? (EPOLLIN | EPOLLOUT) : EPOLLIN;
  ev.data.fd = c.fd;
  epoll_ctl(g_epoll, EPOLL_CTL_MOD, c.fd, &ev);
}

// One delivery: one send() of the whole frame (header included).
void write_frame(Conn& c, std::string_view frame) {
  if (g_uring != Uring::kOff) {
    Buf* b = new Buf{std::string(frame)};
    ++b->refs;
    enqueue(c, b);
    return release(b);
  }
  if (!c.pending.empty()) {
    c.pending.append(frame);
    return;
  }
  ssize_t n = ::send(c.fd, frame.data(), frame.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  if (n < 0) n = 0;  // EAGAIN, or a dead peer the read side will see
  if (static_cast<size_t>(n) < frame.size()) {
    c.pending.assign(frame.substr(static_cast<size_t>(n)));
    arm_out(c, true);
  }
}

// write_frame for a frame no one else holds: io_uring mode keeps it without a copy.
void write_owned(Conn& c, std::string frame) {
  if (g_uring == Uring::kOff) return write_frame(c, frame);
  Buf* b = new Buf{std::move(frame)};
  ++b->refs;
  enqueue(c, b);
  release(b);
}

// A text frame: the server header (unmasked) in front of `json`.
std::string text_frame(std::string_view json) {
  std::string f;
  f.reserve(json.size() + 10);
  f.push_back(static_cast<char>(0x81));
  const size_t n = json.size();
  if (n < 126) {
    f.push_back(static_cast<char>(n));
  } else if (n < 65536) {
    f.push_back(126);
    f.push_back(static_cast<char>(n >> 8));
    f.push_back(static_cast<char>(n & 0xff));
  } else {
    f.push_back(127);
    for (int i = 7; i >= 0; --i) f.push_back(static_cast<char>((uint64_t(n) >> (8 * i)) & 0xff));
  }
  f.append(json);
  return f;
}

// The batch's bytes go as they are: moved in io_uring mode, sent from it otherwise.
void write_batch(Conn& c) {
  if (g_uring == Uring::kOff) {
    write_frame(c, c.batch);
    c.batch.clear();
    return;
  }
  std::string out = std::move(c.batch);
  c.batch.clear();
  if (!g_spare.empty()) {
    c.batch = std::move(g_spare.back());
    g_spare.pop_back();
  }
  write_owned(c, std::move(out));
}

// A reply goes at once, behind what the connection's batch holds, so that a
// member who leaves and joins again never sees a batched frame after the reply
// that already counted it.
void send_json(Conn& c, std::string_view json) {
  if (c.batch.empty()) return write_owned(c, text_frame(json));
  c.batch.append(text_frame(json));
  write_batch(c);  // its fd stays in g_dirty; the tick finds an empty batch
}

// A delivery: at once, or into the connection's batch for the next tick.
void deliver(Conn& c, std::string_view frame) {
  if (g_tick_ms <= 0) return write_frame(c, frame);
  if (c.batch.empty() && !c.dirty) {
    // The first batch of a tick: due at the next multiple of TICK_MS, as Parley aligns.
    if (g_dirty.empty()) g_tick_due = (now_ms() / g_tick_ms + 1) * g_tick_ms;
    c.dirty = true;
    g_dirty.push_back(c.fd);
  }
  c.batch.append(frame);
}

// A frame for every member but `skip`: with io_uring at once, one copy shared by
// all the sends of it.
void deliver_all(const std::vector<Conn*>& members, std::string frame, const Conn* skip) {
  if (g_uring != Uring::kOff && g_tick_ms <= 0) {
    Buf* b = new Buf{std::move(frame)};
    ++b->refs;
    for (Conn* m : members)
      if (m != skip) enqueue(*m, b);
    return release(b);
  }
  for (Conn* m : members)
    if (m != skip) deliver(*m, frame);
}


void close_conn(Conn& c) {
  if (c.touched) std::erase(g_touched, &c);
  for (Buf* b : c.q) release(b);
  for (Room* r : c.rooms) std::erase(r->members, &c);
  epoll_ctl(g_epoll, EPOLL_CTL_DEL, c.fd, nullptr);
#ifdef PARLEY_FLOOR_URING
  if (g_fixed && static_cast<unsigned>(c.fd) < kFixedFiles) {
    int none = -1;
    io_uring_register_files_update(&g_ring, static_cast<unsigned>(c.fd), &none, 1);
  }
#endif
  ::close(c.fd);
  g_conns.erase(c.fd);  // destroys c
}

// The length of the JSON value starting at p (already validated by simdjson).
size_t value_length(const char* p, const char* end) {
  const char* q = p;
  int depth = 0;
  bool in_string = false;
  for (; q < end; ++q) {
    const char ch = *q;
    if (in_string) {
      if (ch == '\\') ++q;
      else if (ch == '"') {
        in_string = false;
        if (depth == 0) return static_cast<size_t>(q + 1 - p);
      }
      continue;
    }
    if (ch == '"') in_string = true;
    else if (ch == '{' || ch == '[') ++depth;
    else if (ch == '}' || ch == ']') {
      if (--depth <= 0) return static_cast<size_t>(q + 1 - p) - (depth < 0 ? 1 : 0);
    } else if (depth == 0 && (ch == ',' || ch == ' ')) {
      return static_cast<size_t>(q - p);
    }
  }
  return static_cast<size_t>(q - p);
}

std::string rid_part(std::string_view rid) {
  return rid.empty() ? std::string() : std::string(",\"rid\":") + std::string(rid);
}

// Handles one client message. Returns false when the connection must close.
bool on_message(Conn& c, std::string& payload) {
  namespace od = simdjson::ondemand;
  payload.reserve(payload.size() + simdjson::SIMDJSON_PADDING);
  od::document doc;
  std::string_view op, ch, rid, id, key, body;
  if (g_parser.iterate(payload.data(), payload.size(), payload.capacity()).get(doc)) {
    send_json(c, R"({"op":"error","code":"bad_request","msg":"not JSON"})");
    return true;
  }
  od::object obj;
  if (doc.get_object().get(obj)) return true;
  for (auto field : obj) {
    std::string_view k;
    if (field.unescaped_key().get(k)) return true;
    od::value v;
    if (field.value().get(v)) return true;
    std::string_view raw;
    if (k == "op") {
      if (v.get_string().get(op)) return true;
    } else if (k == "ch") {
      ch = v.raw_json_token();  // the quoted JSON token, sent back as is
    } else if (k == "rid") {
      rid = v.raw_json_token();
    } else if (k == "id") {
      id = v.raw_json_token();
    } else if (k == "key") {
      key = v.raw_json_token();
    } else if (k == "body") {
      // From the token's start to the end of the value, which the token
      // alone does not give for an object or an array.
      raw = v.raw_json_token();
      const char* end = payload.data() + payload.size();
      body = std::string_view(raw.data(), value_length(raw.data(), end));
    }
  }
  auto trim = [](std::string_view s) {
    while (!s.empty() && (s.back() == ' ' || s.back() == '\n' || s.back() == '\t' || s.back() == '\r'))
      s.remove_suffix(1);
    return s;
  };
  ch = trim(ch), rid = trim(rid), id = trim(id), key = trim(key), body = trim(body);
  std::string out;
  if (op == "hello") {
    c.user = "\"u-" + c.name + "\"";
    out = "{\"op\":\"welcome\"" + rid_part(rid) + ",\"conn\":\"" + c.name + "\",\"user\":" +
          c.user + ",\"tenant\":\"floor\",\"heartbeat_ms\":25000}";
    send_json(c, out);
  } else if (op == "join") {
    Room& r = g_rooms[std::string(ch)];
    if (std::find(c.rooms.begin(), c.rooms.end(), &r) == c.rooms.end()) {
      c.rooms.push_back(&r);
      r.members.push_back(&c);
    }
    out = "{\"op\":\"joined\"" + rid_part(rid) + ",\"ch\":" + std::string(ch) +
          ",\"seq\":" + std::to_string(r.seq) + ",\"recovered\":false}";
    send_json(c, out);
  } else if (op == "leave") {
    auto it = g_rooms.find(std::string(ch));
    if (it != g_rooms.end()) {
      std::erase(c.rooms, &it->second);
      std::erase(it->second.members, &c);
    }
    send_json(c, "{\"op\":\"left\"" + rid_part(rid) + ",\"ch\":" + std::string(ch) + "}");
  } else if (op == "pub") {
    auto it = g_rooms.find(std::string(ch));
    if (it == g_rooms.end() ||
        std::find(c.rooms.begin(), c.rooms.end(), &it->second) == c.rooms.end()) {
      send_json(c, "{\"op\":\"error\"" + rid_part(rid) +
                       ",\"code\":\"forbidden\",\"msg\":\"not joined\"}");
      return true;
    }
    Room& r = it->second;
    const uint64_t seq = ++r.seq;
    const std::string seq_s = std::to_string(seq);
    send_json(c, "{\"op\":\"ack\"" + rid_part(rid) + ",\"ch\":" + std::string(ch) + ",\"id\":" +
                     std::string(id.empty() ? "null" : id) + ",\"seq\":" + seq_s + ",\"dup\":false}");
    const auto ts = std::chrono::duration_cast<std::chrono::milliseconds>(
                        std::chrono::system_clock::now().time_since_epoch())
                        .count();
    // Encoded once; one send per member, the publisher included.
    std::string frame = text_frame(
        "{\"op\":\"msg\",\"ch\":" + std::string(ch) + ",\"seq\":" + seq_s + ",\"from\":" + c.user +
        ",\"id\":" + std::string(id.empty() ? "null" : id) + ",\"ts\":" + std::to_string(ts) +
        ",\"body\":" + std::string(body.empty() ? "null" : body) + "}");
    deliver_all(r.members, std::move(frame), nullptr);
  } else if (op == "state") {
    auto it = g_rooms.find(std::string(ch));
    if (it == g_rooms.end()) return true;
    std::string frame =
        text_frame("{\"op\":\"state\",\"ch\":" + std::string(ch) + ",\"from\":" + c.user +
                   ",\"key\":" + std::string(key.empty() ? "\"\"" : key) + ",\"body\":" +
                   std::string(body.empty() ? "null" : body) + "}");
    deliver_all(it->second.members, std::move(frame), &c);
  } else if (op == "ping") {
    send_json(c, "{\"op\":\"pong\"" + rid_part(rid) + "}");
  } else {
    send_json(c, "{\"op\":\"error\"" + rid_part(rid) +
                     ",\"code\":\"bad_request\",\"msg\":\"unknown op\"}");
  }
  return true;
}

bool on_handshake(Conn& c) {
  const size_t end = c.in.find("\r\n\r\n");
  if (end == std::string::npos) return c.in.size() < 16384;
  std::string_view head(c.in.data(), end);
  std::string key;
  size_t pos = 0;
  while (pos < head.size()) {
    size_t eol = head.find("\r\n", pos);
    if (eol == std::string_view::npos) eol = head.size();
    std::string_view line = head.substr(pos, eol - pos);
    if (line.size() > 18 && strncasecmp(line.data(), "sec-websocket-key:", 18) == 0) {
      line.remove_prefix(18);
      while (!line.empty() && line.front() == ' ') line.remove_prefix(1);
      while (!line.empty() && line.back() == ' ') line.remove_suffix(1);
      key = std::string(line);
    }
    pos = eol + 2;
  }
  if (key.empty()) return false;
  const std::string resp =
      "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
      "Sec-WebSocket-Accept: " + bench::ws::accept_for(key) + "\r\n\r\n";
  write_frame(c, resp);
  c.in.erase(0, end + 4);
  c.upgraded = true;
  return true;
}

// Parses every complete frame of c.in. Returns false when the connection must close.
bool on_frames(Conn& c) {
  size_t off = 0;
  std::string payload;
  while (off < c.in.size()) {
    bench::ws::FrameHeader h;
    if (!bench::ws::parse_header(c.in.data() + off, c.in.size() - off, h)) break;
    if (h.payload_len > kMaxInput) return false;
    if (c.in.size() - off < h.header_len + h.payload_len) break;
    char* p = c.in.data() + off + h.header_len;
    const size_t n = static_cast<size_t>(h.payload_len);
    if (h.masked) bench::ws::apply_mask(p, n, h.mask);
    off += h.header_len + n;
    if (h.op == bench::ws::kClose) return false;
    if (h.op == bench::ws::kPing) {
      std::string pong;
      pong.push_back(static_cast<char>(0x8A));
      pong.push_back(static_cast<char>(std::min<size_t>(n, 125)));
      pong.append(p, std::min<size_t>(n, 125));
      write_frame(c, pong);
      continue;
    }
    if (h.op != bench::ws::kText || !h.fin) continue;  // the bench sends whole text frames
    payload.assign(p, n);
    if (!on_message(c, payload)) return false;
  }
  c.in.erase(0, off);
  return true;
}

void on_readable(Conn& c) {
  static char buf[kReadBytes];
  for (;;) {
    const ssize_t n = ::recv(c.fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) return close_conn(c);
    if (n < 0) {
      if (errno == EINTR) continue;
      return;
    }
    c.in.append(buf, static_cast<size_t>(n));
    if (c.in.size() > kMaxInput) return close_conn(c);
    if (!c.upgraded) {
      if (!on_handshake(c)) return close_conn(c);
      if (!c.upgraded) {  // the request head is not complete yet
        if (static_cast<size_t>(n) < sizeof buf) return;
        continue;
      }
    }
    if (!on_frames(c)) return close_conn(c);
    if (static_cast<size_t>(n) < sizeof buf) return;
  }
}

void on_writable(Conn& c) {
  while (!c.pending.empty()) {
    const ssize_t n = ::send(c.fd, c.pending.data(), c.pending.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EAGAIN) return;
      return close_conn(c);
    }
    c.pending.erase(0, static_cast<size_t>(n));
  }
  arm_out(c, false);
}

void flush_tick() {
  std::vector<int> dirty;
  dirty.swap(g_dirty);
  for (int fd : dirty) {
    auto it = g_conns.find(fd);
    if (it == g_conns.end()) continue;  // closed since; its batch went with it
    Conn& c = *it->second;
    c.dirty = false;
    if (c.batch.empty()) continue;  // a reply took it
    write_batch(c);
  }
}

#ifdef PARLEY_FLOOR_URING
void submit_ring() {
  // DEFER_TASKRUN runs a link's next send as task work of this thread: only an
  // io_uring_enter that asks for events runs it.
  if (g_uring == Uring::kDefer) io_uring_submit_and_get_events(&g_ring);
  else io_uring_submit(&g_ring);
}

// One connection's queued frames as linked sends, in order (at most kMaxChain;
// the rest go when this chain has completed).
void emit_chain(Conn& c) {
  const size_t n = std::min(c.q.size(), kMaxChain);
  if (n == 0) return;
  if (io_uring_sq_space_left(&g_ring) < n) submit_ring();  // a chain never spans two submits
  for (size_t i = 0; i < n; ++i) {
    io_uring_sqe* sqe = io_uring_get_sqe(&g_ring);
    uint32_t idx;
    if (!g_free_sends.empty()) {
      idx = g_free_sends.back();
      g_free_sends.pop_back();
    } else {
      idx = static_cast<uint32_t>(g_sends.size());
      g_sends.emplace_back();
    }
    Buf* b = c.q[i];  // the queue's reference moves to the send
    g_sends[idx] = Send{c.fd, c.id, b};
    io_uring_prep_send(sqe, c.fd, b->bytes.data(), b->bytes.size(), MSG_NOSIGNAL | MSG_WAITALL);
    if (g_fixed && static_cast<unsigned>(c.fd) < kFixedFiles) sqe->flags |= IOSQE_FIXED_FILE;
    io_uring_sqe_set_data64(sqe, idx);
    if (i + 1 < n) sqe->flags |= IOSQE_IO_LINK;
  }
  c.q.erase(c.q.begin(), c.q.begin() + static_cast<std::ptrdiff_t>(n));
  c.inflight += static_cast<uint32_t>(n);
  g_inflight += n;
}

void reap_ring() {
  unsigned head;
  unsigned seen = 0;
  io_uring_cqe* cqe;
  io_uring_for_each_cqe(&g_ring, head, cqe) {
    ++seen;
    const uint32_t idx = static_cast<uint32_t>(cqe->user_data);
    const Send s = g_sends[idx];
    g_free_sends.push_back(idx);
    --g_inflight;
    const bool whole = cqe->res == static_cast<int>(s.buf->bytes.size());
    release(s.buf);
    auto it = g_conns.find(s.fd);
    if (it == g_conns.end() || it->second->id != s.id) continue;  // closed since
    Conn& c = *it->second;
    --c.inflight;
    // An error (a link after it is cancelled) ends the connection, as a failed
    // send() would through the read side.
    if (!whole) c.broken = true;
    if ((c.broken || (c.inflight == 0 && !c.q.empty())) && !c.touched) {
      c.touched = true;
      g_touched.push_back(&c);
    }
  }
  io_uring_cq_advance(&g_ring, seen);
}

// The end of an iteration: every queued connection's chain, one submit, the
// completions. Repeats only while completions free a chain with bytes behind it.
void flush_ring() {
  while (!g_touched.empty()) {
    std::vector<Conn*> touched;
    touched.swap(g_touched);
    std::vector<int> broken;
    for (Conn* c : touched) {
      c->touched = false;
      if (c->broken) broken.push_back(c->fd);
      else if (c->inflight == 0) emit_chain(*c);
    }
    for (int fd : broken) {
      auto it = g_conns.find(fd);
      if (it != g_conns.end()) close_conn(*it->second);
    }
    if (io_uring_sq_ready(&g_ring) > 0) submit_ring();
    reap_ring();
  }
  // Sends the kernel is still finishing (a full socket) complete later, as task
  // work (DEFER_TASKRUN: run only by an enter that asks for events) or straight
  // into the CQ: the ring signals its eventfd only while there are any, a flag
  // in shared memory, no syscall. A completion that came before the flag was
  // set is looked for once after.
  const bool watch = g_inflight > 0;
  if (watch != g_ring_watched) {
    g_ring_watched = watch;
    io_uring_cq_eventfd_toggle(&g_ring, watch);
    if (watch) {
      if (g_uring == Uring::kDefer) io_uring_get_events(&g_ring);
      reap_ring();
      if (!g_touched.empty()) flush_ring();
    }
  }
}

void on_ring_signal() {
  eventfd_t v;
  eventfd_read(g_ring_evfd, &v);
  if (g_uring == Uring::kDefer) io_uring_get_events(&g_ring);
  reap_ring();
}

bool setup_ring() {
  io_uring_params p{};
  if (g_uring == Uring::kDefer) p.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
  if (g_uring == Uring::kCoop) p.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_COOP_TASKRUN;
  const int r = io_uring_queue_init_params(4096, &g_ring, &p);
  if (r < 0) {
    std::fprintf(stderr, "parley-floor: io_uring_queue_init_params: %s\n", std::strerror(-r));
    return false;
  }
  io_uring_register_ring_fd(&g_ring);  // saves a file lookup per enter; optional
  if (g_fixed) {
    // The table counts against RLIMIT_NOFILE: raise the soft limit to what it needs.
    rlimit rl{};
    getrlimit(RLIMIT_NOFILE, &rl);
    if (rl.rlim_max < kFixedFiles + 64) kFixedFiles = static_cast<unsigned>(rl.rlim_max / 2);
    if (rl.rlim_cur < kFixedFiles + 64) {
      rl.rlim_cur = kFixedFiles + 64;
      setrlimit(RLIMIT_NOFILE, &rl);
    }
  }
  if (int r = g_fixed ? io_uring_register_files_sparse(&g_ring, kFixedFiles) : 0; r < 0) {
    std::fprintf(stderr, "parley-floor: io_uring_register_files_sparse: %s\n", std::strerror(-r));
    return false;
  }
  // The ring's own fd does not turn readable for DEFER_TASKRUN's task work; a
  // registered eventfd is signalled for it (and for completions in the other modes).
  g_ring_evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (g_ring_evfd < 0 || io_uring_register_eventfd(&g_ring, g_ring_evfd) < 0) {
    std::perror("parley-floor: eventfd for the ring");
    return false;
  }
  io_uring_cq_eventfd_toggle(&g_ring, false);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = g_ring_evfd;
  epoll_ctl(g_epoll, EPOLL_CTL_ADD, g_ring_evfd, &ev);
  return true;
}
#else
void flush_ring() {}
bool setup_ring() {
  std::fprintf(stderr, "parley-floor: built without liburing (scripts/setup.sh installs it)\n");
  return false;
}
#endif

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string_view> pos;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--io-uring-available") {  // for tests: exit 0 when a ring can be set up here
#ifdef PARLEY_FLOOR_URING
      io_uring probe;
      if (io_uring_queue_init(8, &probe, 0) < 0) return 1;
      io_uring_queue_exit(&probe);
      return 0;
#else
      return 1;
#endif
    }
    if (a == "--io-uring" || a == "--io-uring=defer") g_uring = Uring::kDefer;
    else if (a == "--io-uring=coop") g_uring = Uring::kCoop;
    else if (a == "--io-uring=plain") g_uring = Uring::kPlain;
    else if (a == "--fixed-files") g_fixed = true;
    else if (a.starts_with("--")) {
      std::fprintf(stderr, "usage: parley-floor PORT [TICK_MS] [--io-uring[=defer|coop|plain] [--fixed-files]]\n");
      return 2;
    } else pos.push_back(a);
  }
  const int port = pos.size() > 0 ? std::atoi(pos[0].data()) : 7730;
  g_tick_ms = pos.size() > 1 ? std::atoi(pos[1].data()) : 0;
  const int lfd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  const int one = 1;
  setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(lfd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(lfd, 4096) != 0) {
    std::perror("parley-floor: bind/listen");
    return 1;
  }
  g_epoll = epoll_create1(0);
  if (g_uring != Uring::kOff && !setup_ring()) return 1;
  epoll_event lev{};
  lev.events = EPOLLIN;
  lev.data.fd = lfd;
  epoll_ctl(g_epoll, EPOLL_CTL_ADD, lfd, &lev);
  std::printf("parley-floor listening on 127.0.0.1:%d\n", port);
  std::fflush(stdout);
  epoll_event events[256];
  for (;;) {
    flush_ring();
    int timeout = -1;
    if (!g_dirty.empty()) {
      const int64_t now = now_ms();
      if (now >= g_tick_due) {
        flush_tick();
        continue;
      }
      timeout = static_cast<int>(g_tick_due - now);
    }
    const int n = epoll_wait(g_epoll, events, 256, timeout);
    for (int i = 0; i < n; ++i) {
      const int fd = events[i].data.fd;
#ifdef PARLEY_FLOOR_URING
      if (g_uring != Uring::kOff && fd == g_ring_evfd) {
        on_ring_signal();
        continue;
      }
#endif
      if (fd == lfd) {
        for (;;) {
          // With io_uring the socket blocks, so that a send it cannot finish
          // at once is polled and completed by the kernel, not failed with
          // EAGAIN; reads pass MSG_DONTWAIT either way.
          const int cfd =
              ::accept4(lfd, nullptr, nullptr, g_uring != Uring::kOff ? 0 : SOCK_NONBLOCK);
          if (cfd < 0) break;
          setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
          auto c = std::make_unique<Conn>();
          c->fd = cfd;
          c->id = g_next_conn;
          c->name = "c" + std::to_string(g_next_conn++);
          epoll_event ev{};
          ev.events = EPOLLIN;
          ev.data.fd = cfd;
          epoll_ctl(g_epoll, EPOLL_CTL_ADD, cfd, &ev);
          g_conns.emplace(cfd, std::move(c));
#ifdef PARLEY_FLOOR_URING
          if (g_fixed && static_cast<unsigned>(cfd) < kFixedFiles)
            io_uring_register_files_update(&g_ring, static_cast<unsigned>(cfd), &cfd, 1);
#endif
        }
        continue;
      }
      auto it = g_conns.find(fd);
      if (it == g_conns.end()) continue;
      Conn& c = *it->second;
      if (events[i].events & EPOLLOUT) {
        on_writable(c);
        if (!g_conns.contains(fd)) continue;
      }
      if (events[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP)) on_readable(c);
    }
  }
}
