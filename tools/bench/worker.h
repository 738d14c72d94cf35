// A Worker is one load thread: an io_context, the connections of the channels it
// owns, and everything they measure. Channels are assigned to workers (and to
// processes with --procs) whole, so every seq check and the audit are local to one
// thread and need no locks.
//
// Thread: the public methods marked "any thread" post to the worker and wait for
// the answer; everything else runs on the worker's own thread.
#pragma once

#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include "channel_audit.h"
#include "connection.h"
#include "options.h"
#include "msgpack_frame.h"
#include "server_frame.h"
#include "stats.h"

namespace bench {

int64_t now_ns();  // steady clock, shared by all processes of a run (CLOCK_MONOTONIC)

// Which channels and connections a (process, worker) pair owns.
struct Assignment {
  std::vector<uint32_t> channels;  // global channel indexes
  uint64_t conns = 0;              // connections among them
};
uint32_t channel_count(const Options& o);
Assignment assign(const Options& o, int proc, int worker);

struct WorkerFinal {
  Counters counters;
  Latencies latencies;
  AuditResult audit;
};

class Worker {
 public:
  Worker(const Options& o, int index, Assignment a, double total_conns);
  ~Worker();

  // Any thread.
  void start(int64_t t0_ns);
  void set_rate(double total_rate);
  void set_state_hz(double hz);  // per connection
  void set_publishing(bool on);
  std::pair<Counters, Latencies> sample();  // interval latencies since the last call
  bool drained();
  void start_history_audit();
  bool history_done();
  WorkerFinal finish();  // audits, closes everything, stops the thread

  // Worker thread, for Connection.
  const Options& opts() const { return o_; }
  boost::asio::io_context& io() { return io_; }
  Counters& counters() { return c_; }
  Latencies& total() { return total_; }
  Latencies& interval() { return interval_; }
  FrameReader& reader() { return reader_; }
  std::vector<char>& read_buffer() { return rbuf_; }
  std::string& scratch() { return scratch_; }
  MsgpackFrameReader& mp_reader() { return mp_reader_; }
  ChannelState& channel(uint32_t local) { return channels_[local]; }
  // Local index of a channel name of this run; -1 when foreign.
  int64_t local_channel(std::string_view name) const;
  const boost::asio::ip::tcp::endpoint& endpoint() const { return endpoint_; }
  bool source_address(uint32_t gid, boost::asio::ip::address& out) const;
  const std::string& host_header() const { return host_header_; }
  std::string token_for(uint32_t gid) const;
  bool shutting_down() const { return shutting_down_; }
  void schedule_retry(Connection* c, uint64_t rid, int64_t due_ns);
  void schedule_reconnect(Connection* c, int64_t due_ns);
  void record_latency(Histogram Latencies::*which, int64_t ns) {
    (total_.*which).record(ns);
    (interval_.*which).record(ns);
  }
  uint32_t random();
  const std::string& padding() const { return padding_; }
  void on_history_msg(const Event& ev);
  void on_history_page(const Event& ev);

 private:
  template <class F>
  auto call(F f) -> decltype(f()) {
    std::packaged_task<decltype(f())()> task(std::move(f));
    auto fut = task.get_future();
    boost::asio::post(io_, [&task] { task(); });
    return fut.get();
  }
  void on_tick();
  void open_connections(int64_t now);
  void pace(int64_t now, double rate, int64_t& next_ns, size_t& cursor,
            const std::function<bool(Connection&, int64_t)>& send, bool record_lag);
  void run_timers(int64_t now);
  void check_timeouts(int64_t now);
  AuditResult audit();

  struct Timed {
    int64_t due_ns;
    Connection* conn;
    uint64_t rid;  // 0 = reconnect
    bool operator>(const Timed& o) const { return due_ns > o.due_ns; }
  };

  boost::asio::io_context io_{1};
  const Options& o_;
  int index_;
  Assignment assignment_;
  double share_;  // this worker's fraction of all connections
  boost::asio::ip::tcp::endpoint endpoint_;
  std::string host_header_;
  std::vector<ChannelState> channels_;
  std::vector<int32_t> local_of_global_;
  std::vector<std::unique_ptr<Connection>> conns_;
  Counters c_;
  Latencies total_, interval_;
  FrameReader reader_;
  std::vector<char> rbuf_;
  std::string scratch_;
  MsgpackFrameReader mp_reader_;
  boost::asio::steady_timer tick_;
  std::thread thread_;
  std::vector<Timed> timers_;  // min-heap
  int64_t t0_ = 0;
  size_t opened_ = 0;
  bool publishing_ = false;
  bool shutting_down_ = false;
  double pub_rate_ = 0;  // this worker's share, msgs/s
  double state_hz_ = 0;  // per connection
  int64_t next_pub_ = 0, next_state_ = 0, next_churn_ = 0, next_ping_ = 0, next_up_ = 0;
  size_t pub_cursor_ = 0, state_cursor_ = 0, ping_cursor_ = 0, up_cursor_ = 0;
  int64_t next_timeout_check_ = 0;
  uint64_t rng_;
  std::string padding_;  // body filler, --body-bytes of it
};

}  // namespace bench
