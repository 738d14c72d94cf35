// ChannelCore: one channel's resume logic behind parley::Channel. It keeps
// the last seq delivered, so a rejoin asks for exactly what was missed
// (`since`), drops what was delivered before, and repairs a hole in the seq
// stream from `history` before delivering anything newer. Publishes wait in a
// FIFO until joined and are resent with their client id after a drop or a
// retryable error. `state` is latest-wins per key and resent after a rejoin.
//
// Thread: the client's poll() thread, driven by its ClientCore.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "parley/channel.h"
#include "timers.h"

namespace parley::detail {

class ClientCore;
struct Call;

/// fire-and-forget rids (state, up) remembered for their error replies, oldest forgotten first.
template <class V>
class RidMemory {
 public:
  static constexpr std::size_t kMax = 1024;
  void remember(int64_t rid, V v) {
    map_.emplace(rid, std::move(v));
    order_.push_back(rid);
    while (order_.size() > kMax) {
      map_.erase(order_.front());
      order_.pop_front();
    }
  }
  bool take(int64_t rid, V& out) {
    auto it = map_.find(rid);
    if (it == map_.end()) return false;
    out = std::move(it->second);
    map_.erase(it);
    return true;
  }
  void clear() {
    map_.clear();
    order_.clear();
  }

 private:
  std::unordered_map<int64_t, V> map_;
  std::deque<int64_t> order_;
};

class ChannelCore {
 public:
  static constexpr std::size_t kMaxUpQueue = 10000;       // `up`s held while not joined
  static constexpr int64_t kHistoryPage = 1000;           // PROTOCOL.md caps history at 1000
  static constexpr int kMaxFailedPages = 3;               // failed repair reads in a row before a gap

  ChannelCore(ClientCore& client, std::string name);

  // ---- parley::Channel ----
  const std::string& name() const { return name_; }
  bool joined() const { return status_ == Status::joined; }
  int64_t last_seq() const { return last_seq_; }
  std::vector<std::string> members() const { return {members_.begin(), members_.end()}; }
  void join(std::function<void(const Result<Joined>&)> done, std::optional<int64_t> since);
  void leave();
  std::string publish(Json body, std::function<void(const Result<Ack>&)> done, std::string id);
  void set_state(const std::string& key, Json body);
  void clear_state(const std::string& key);
  void up(Json body);
  void history(const HistoryQuery& q, std::function<void(Result<std::vector<Message>>)> done);
  /// `op` "edit" (with `body`) or "delete" of message `target`.
  void moderate(const char* op, int64_t target, Json body, std::function<void(const Result<Moderated>&)> done);

  std::function<void(const Message&)> on_msg;
  std::function<void(const State&)> on_state;
  std::function<void(const Presence&)> on_presence;
  std::function<void(const Joined&)> on_joined;
  std::function<void(const Gap&)> on_gap;
  std::function<void(const Reset&)> on_reset;
  std::function<void(const Error&)> on_error;
  std::function<void(const Message&)> on_edit;
  std::function<void(const Message&)> on_delete;
  std::function<void(const Kicked&)> on_kicked;

  // ---- driven by ClientCore ----
  void on_open();
  void on_drop();
  void on_client_closed(const Error& err);
  void on_event(Json& obj);  // msg, edit, delete, state, presence of this channel
  /// A `kicked` frame: no longer a member, and no rejoin.
  void on_kicked_frame(const Json& obj);
  /// A state that arrived as an `sd` and was applied (ClientCore::on_state_delta).
  void on_delta_state(State s);
  /// The client lost track of a stream's base: leave and join again (with since).
  void resync();
  /// An error frame for a state or up this channel sent; true when it was ours.
  bool on_fire_and_forget_error(const Json& obj);

 private:
  enum class Status { idle, joining, joined };
  enum class PubState { queued, inflight, waiting, done };
  struct Publish {
    std::string id;
    Json body;
    std::function<void(const Result<Ack>&)> done;
    int attempts = 0;
    PubState state = PubState::queued;
    TimerId timer = 0;
  };
  using PublishPtr = std::shared_ptr<Publish>;
  struct StateSlot {
    Json body;
    bool has_body = false;
    bool dirty = false;
    int64_t last_sent = INT64_MIN / 2;
    int64_t hold_until = 0;
    TimerId timer = 0;
  };

  void send_join();
  void on_joined_reply(Json& obj);
  void replace_members(const std::vector<std::string>& list);
  void settle_join(const Result<Joined>& r);
  void fail_everything(const Error& err);
  void on_msg_frame(Json& obj);
  void deliver(Message& m);
  void hold(Message m);
  void repair_step();
  int64_t repair_bound() const;
  void on_repair_page(Result<std::vector<Message>> page, uint64_t gen);
  void pump();
  void on_publish_error(const PublishPtr& p, const Json& err);
  void settle(const PublishPtr& p, const Result<Ack>& r);
  void flush_state(const std::string& key);
  void clear_states();
  void send_up(Json body);

  ClientCore& client_;
  std::string name_;
  bool want_ = false;  // the application asked to be a member
  Status status_ = Status::idle;
  uint64_t join_gen_ = 0;
  int64_t last_seq_ = -1;
  std::vector<std::function<void(const Result<Joined>&)>> join_waiters_;
  std::set<std::string> members_;
  std::list<PublishPtr> publishes_;
  std::map<std::string, StateSlot> states_;
  RidMemory<std::string> state_rids_;
  std::deque<Json> ups_;
  RidMemory<Json> up_rids_;
  bool repairing_ = false;
  uint64_t repair_gen_ = 0;  // a repair's history reply after a leave / reset is ignored
  std::map<int64_t, Message> buffer_;  // msgs newer than a gap, by seq
  int64_t dropped_high_ = -1;
  int failed_pages_ = 0;  // repair reads failed in a row  // the newest seq dropped from a full buffer_, read from history later
};

/// A history / msg / edit / delete object into a Message; false when its seq
/// (or an edit's / delete's target) is not a positive integer.
bool to_message(Json& obj, const std::string& ch, Message& out);

}  // namespace parley::detail
