// One client's protocol state machine (PROTOCOL.md): hello, then ops.
//
// Runs on its connection's loop; every method is called there. Owned by
// shared_ptr: the connection holds it until closed, the loop's session table
// holds it while open, and hub requests in flight hold it until they answer.
#pragma once

#include <cstdint>
#include <deque>
#include <list>
#include <memory>
#include <optional>
#include <string>
#include <map>
#include <vector>

#include "auth/jwt.h"
#include "auth/token_bucket.h"
#include "cluster/sanctions.h"
#include "hub/membership.h"
#include "hub/requests.h"
#include "hub/subscriber.h"
#include "hub/upstream_sink.h"
#include "net/connection.h"
#include "protocol/client_op.h"
#include "events/event_service.h"
#include "session/hook_gate.h"

namespace parley {
struct TenantRuntime;
struct TenantSnapshot;
}  // namespace parley

namespace parley::session {

class Gateway;

class ClientSession final : public net::ConnectionHandler,
                            public hub::Subscriber,
                            public events::EventSink,
                            public std::enable_shared_from_this<ClientSession> {
 public:
  ClientSession(Gateway& gw, std::shared_ptr<net::Connection> conn, uint64_t conn_id,
                int64_t hello_deadline_ms);

  // net::ConnectionHandler
  void on_frame(std::string_view payload, bool binary) override;
  void on_refused(net::Refusal why) override;
  void on_closed() override;

  // hub::Subscriber
  uint64_t conn_id() const override { return conn_id_; }
  const std::string& user_id() const override { return user_; }
  unsigned loop() const override { return conn_->loop(); }
  bool gone() const override { return closed_ || conn_->closing(); }
  protocol::Encoding encoding() const override { return conn_->encoding(); }
  bool state_deltas() const override { return state_deltas_; }
  bool state_delta_batch() const override { return state_delta_batch_; }
  void send(net::OutFrame&& frame) override;
  bool corked() const override { return conn_->corked(); }

  // EventSink
  void deliver_event_frame(std::string frame, std::function<void()> written) override;
  void deliver_event_frames(std::vector<std::string> frames) override;

  bool authenticated() const { return tenant_ != nullptr; }
  TenantRuntime* tenant() const { return tenant_; }
  int64_t hello_deadline_ms() const { return hello_deadline_ms_; }
  net::Connection& connection() { return *conn_; }
  // Bytes the connection wrote since it opened (connection_traffic.h says
  // what counts), and their count at the previous admin listing.
  uint64_t bytes_out() const { return conn_->wire_bytes_out(); }
  uint64_t bytes_out_listed = 0;
  // Closes with a frame explaining why (bye or error) and a close code.
  void close_with(std::string frame, int code, std::string reason);
  // PROTOCOL.md "Moderation": leaves `ch` as a `leave` would and sends a
  // `kicked` frame; false when not joined to it (nothing sent).
  bool kick(const std::string& ch, const std::string& reason);

 private:
  struct Joined {
    // What waits on a join in flight; made only when something does (a joined
    // channel of an idle player carries one pointer for it).
    struct Waiting {
      std::vector<std::string> leave_rids;  // leaves asked while the join was in flight
      // Upstream events (state, up) sent while the first join waits for its
      // reply: the app server hears them after the join event, never before.
      std::vector<hub::UpstreamEvent> held_upstream;
      // Replies to pubs of this channel that came before the join's reply (a
      // pipelined `pub` whose append beat the join's reads): written right after
      // `joined` (PROTOCOL.md: joined comes before anything else of the channel).
      std::vector<std::function<void()>> held_replies;
    };
    bool joining = true;         // the join's reply has not come yet
    bool joined_once = false;    // a join of it succeeded
    hub::Membership membership;  // dropping it leaves the channel
    std::unique_ptr<Waiting> waiting;

    Waiting& wait() {
      if (!waiting) waiting = std::make_unique<Waiting>();
      return *waiting;
    }
    bool leave_asked() const { return waiting && !waiting->leave_rids.empty(); }
  };
  // A `history` op waiting for its turn (one in flight per connection).
  struct PendingHistory {
    std::string rid, ch;
    std::optional<uint64_t> after, before;
    uint32_t limit = 0;
  };


  // The ops of a decoded frame (on_frame), or of one held behind a hook.
  void dispatch(protocol::ClientOp& op, int64_t arrived_ns);
  void on_hello(protocol::ClientOp& op);
  // The end of a hello whose token (and connect hook) let it in.
  void admit(TenantRuntime* t, auth::Claims claims, const protocol::ClientOp& op);
  // PROTOCOL.md "Hooks": asks the app server, then runs `then` with its
  // verdict; the connection's later frames wait, in order, until then.
  void ask_hook(HookAsk ask, std::function<void(HookVerdict)> then);
  HookAsk hook_ask(HookKind kind, const HookConfig& hook, const std::string& ch) const;
  // A frame that came while a hook is asked: kept for after it (bounded).
  void hold(protocol::ClientOp op, int64_t arrived_ns);
  void resume_held();
  void start_join(protocol::ClientOp& op);
  void publish(protocol::ClientOp& op, int64_t arrived_ns);
  // Takes up the tenant's current connection limits (hello, and after a reload).
  void apply_tenant_limits();
  void on_join(protocol::ClientOp& op);
  void on_leave(protocol::ClientOp& op);
  void on_pub(protocol::ClientOp& op, int64_t arrived_ns);
  // A pub's ack or error (on_pub; held behind a join in flight).
  void answer_pub(const std::string& rid, const std::string& ch, const std::string& id, int64_t arrived_ns,
                  store::AppendOutcome out);
  void on_state(protocol::ClientOp& op);
  void on_up(protocol::ClientOp& op);
  void on_history(protocol::ClientOp& op);
  // edit / delete (PROTOCOL.md "Moderation: delete and edit").
  void on_moderate(protocol::ClientOp& op, int64_t arrived_ns);
  void on_event_op(protocol::ClientOp& op);
  void on_emit(protocol::ClientOp& op, int64_t arrived_ns);
  void on_tail(protocol::ClientOp& op);
  void on_consume(protocol::ClientOp& op);
  void on_commit(protocol::ClientOp& op);
  void on_rank(protocol::ClientOp& op);
  void reply_event_error(const std::string& rid, const Error& e,
                         const std::optional<OffsetRange>& range);
  // Runs fn once the connection's backfill is written out (several may wait:
  // history replies and catch-up events frames share the connection's hook).
  void after_backfill(std::function<void()> fn);
  void start_history(PendingHistory h);
  // Queues a history reply once the backfill allowance has room (never a cause
  // for slow_consumer), then starts the next queued request.
  void send_history_reply(std::string frame);

  // Hands an event of `ch` to the upstream forwarder, through the channel's
  // hub shard, when its namespace forwards `bit` (PROTOCOL.md "Upstream
  // forwarding"). The shard puts it after the channel's appends in flight,
  // so e.g. a leave never overtakes this connection's last msg.
  void forward_upstream(hub::UpstreamEventType type, ForwardBit bit, const std::string& ch,
                        std::string key = {}, std::string body = {});

  // A mute (ban) in force for this user in `ch` answers forbidden, with the
  // time left as retry_ms, and returns true.
  bool refused_by(cluster::SanctionKind kind, const std::string& rid, const std::string& ch);
  // Takes a token from the per-connection (and for pub, tenant) bucket;
  // answers rate_limited and returns false when empty.
  bool take_rate(const std::string& rid, bool tenant_wide);
  void reply(std::string frame);
  // An ack: corked in the connection, written at the task's flush point
  // with the delivery behind it (net::Connection::send_corked).
  void reply_corked(std::string frame);
  // A frame did not fit max_queue_bytes: the slow consumer is let go.
  void send_over_cap();
  void reply_error(const std::string& rid, const Error& e);
  void fail(const std::string& rid, ErrorCode code, std::string msg, int close_code = 0);

  Gateway& gw_;
  std::shared_ptr<net::Connection> conn_;
  uint64_t conn_id_;
  int64_t hello_deadline_ms_;
  TenantRuntime* tenant_ = nullptr;
  const TenantSnapshot* limits_of_ = nullptr;  // whose limits conn_ and conn_bucket_ have
  std::string user_;  // the token's sub
  // The token's claims when they restrict channels (a chans claim); null:
  // every channel of the tenant, as for most tokens.
  std::unique_ptr<auth::Claims> chan_claims_;
  bool channel_allowed(std::string_view ch) const {
    return !chan_claims_ || auth::channel_allowed(*chan_claims_, ch);
  }
  auth::TokenBucket conn_bucket_;
  // A tree: an idle player's one channel costs its node alone, where an
  // unordered_map adds a 13-bucket array (~100 B) at the first insert.
  std::map<std::string, Joined, std::less<>> joined_;
  // What only some connections use, allocated at the first use (and kept):
  // an idle player's session carries one pointer for all of it.
  struct Rare {
    // `history` requests queued behind the one in flight. A list allocates
    // nothing while empty, where a std::deque allocates ~480 B on construction.
    std::list<PendingHistory> history_queue;
    std::vector<std::function<void()>> backfill_waiters;
    // Topics this connection tails or consumes: told when it closes.
    std::vector<std::string> topics;
    // Boards whose channel (lb:BOARD[:ROUND]) this connection joined: (board, round).
    std::vector<std::pair<std::string, std::string>> boards;
    // Frames decoded while a hook was asked (ask_hook), with their arrival
    // times and the bytes of their bodies.
    std::deque<std::pair<protocol::ClientOp, int64_t>> held_ops;
    size_t held_bytes = 0;
  };
  Rare& rare() {
    if (!rare_) rare_ = std::make_unique<Rare>();
    return *rare_;
  }
  bool tails(const std::string& topic) const;
  std::unique_ptr<Rare> rare_;
  // A join (leave) of a board's channel (events/board_channel.h) watches
  // (unwatches) the board; other channels are ignored.
  void watch_board(const std::string& ch);
  void unwatch_board(const std::string& ch);
  bool history_busy_ = false;
  bool hook_busy_ = false;  // a hook's verdict is awaited (ask_hook)
  bool closed_ = false;
  bool state_deltas_ = false;  // hello's caps held "state_delta"
  bool state_delta_batch_ = false;  // and "state_delta_batch"
  bool moderator_ = false;     // the token's `mod` claim (or an api_key hello)
};

}  // namespace parley::session
