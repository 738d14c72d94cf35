// One simulated client: a TCP socket speaking Parley over WebSocket or raw TCP
// framing, its memberships and its unacknowledged pubs.
//
// Thread: owned by one Worker and touched only on that worker's io_context thread.
// Lifetime: lives as long as the Worker (never freed mid-run), so handlers capture
// `this`. Reads: one pending read op per connection into its own 512-byte buffer
// (a typical frame), then whatever else the socket holds is read at once into the
// worker's shared buffer; between reads a connection keeps only those 512 bytes
// and a leftover partial frame.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/ip/tcp.hpp>

#include "channel_audit.h"
#include "delta_audit.h"
#include "server_frame.h"

namespace bench {

class Worker;

class Connection {
 public:
  Connection(Worker& w, uint32_t gid, std::vector<uint32_t> channels);

  void connect();
  // Sends one pub to the channel of membership `m`; false when the in-flight window
  // is full or the connection is not ready.
  bool publish(size_t m, int64_t scheduled_ns);
  bool send_state();
  bool send_up();  // a move request for the app server behind upstream forwarding
  void send_ping();
  void send_history(uint32_t chan, uint64_t after, int limit);
  // World churn: leave the first joined channel, rejoin it when `left` arrives.
  bool churn();
  void retry(uint64_t rid);
  void close();

  bool ready() const { return st_ == St::kReady; }
  bool closed() const { return st_ == St::kClosed; }
  uint32_t gid() const { return gid_; }
  int64_t state_since_ns() const { return state_since_ns_; }
  bool connecting() const { return st_ != St::kReady && st_ != St::kClosed && st_ != St::kIdle; }
  size_t inflight() const { return inflight_; }
  const std::vector<Membership>& memberships() const { return members_; }
  std::vector<Membership>& memberships() { return members_; }
  void on_timeout();

 private:
  enum class St : uint8_t { kIdle, kConnecting, kUpgrading, kHello, kJoining, kReady, kClosed };
  struct PendingPub {
    uint64_t rid = 0;
    uint64_t id = 0;
    int64_t first_ns = 0;
    uint32_t member = 0;
    uint16_t attempts = 0;
    bool live = false;
  };

  void set_state(St s);
  void start_session();
  void arm_read();
  void on_read(size_t first);
  // Walks complete frames in buf[0..len) (alloc bytes readable); returns bytes used.
  size_t consume(char* buf, size_t len, size_t alloc);
  void handle_payload(char* data, size_t len, size_t capacity);
  void on_event(const Event& ev);
  void on_joined(const Event& ev);
  void on_msg(const Event& ev);
  void on_ack(const Event& ev);
  void on_error(const Event& ev);
  void on_left(const Event& ev);
  void on_all_joined();
  void send_hello();
  void send_pub(uint64_t rid, const PendingPub& p);
  void send_json(std::string_view json);
  void send_control(uint8_t opcode, std::string_view payload);
  void flush();
  void fail(const char* why);
  void send_join(Membership& m, bool with_since);
  void resend_pending();
  uint32_t next_random();
  Membership* membership_for(std::string_view ch);

  Worker& w_;
  uint32_t gid_;
  St st_ = St::kIdle;
  boost::asio::ip::tcp::socket sock_;
  std::string partial_;   // bytes of an incomplete frame carried to the next read
  std::array<char, 512> first_;  // what the pending read op receives (a typical frame)
  std::string frag_;      // a fragmented WebSocket message being reassembled
  std::string out_;       // frames queued behind the write in flight
  std::string writing_buf_;
  bool writing_ = false;
  bool reading_ = false;
  bool ever_ready_ = false;
  std::string ws_key_;
  std::vector<Membership> members_;
  std::vector<PendingPub> pending_;  // ring indexed by rid & (size - 1)
  uint64_t next_rid_ = 1;
  size_t inflight_ = 0;
  uint32_t next_msg_ = 0;
  uint32_t rng_;
  int64_t state_since_ns_ = 0;
  int reconnect_attempts_ = 0;
  int joins_outstanding_ = 0;
  uint64_t state_counter_ = 0;
  uint64_t gen_ = 0;        // bumped on close: stale handlers of an old socket return
  int64_t batch_now_ = 0;   // receive time of the read being walked
  int64_t last_tick_ns_ = 0;  // receive time of the last read that brought a state
  void note_tick();
  bool mp_ = false;          // frames are MessagePack now (--encoding msgpack)
  DeltaStreams streams_;     // --deltas: this connection's state streams
  void on_state(const Event& ev);
};

}  // namespace bench
