// Moderation (PROTOCOL.md "Moderation: mute, kick, ban"): the mutes and bans
// in force and the kicks, on this node and, through cluster::Sanctions, on
// every node of the deployment.
//
// Two copies of the sanctions: the catalog (every sanction this node knows,
// under mu_) for the writers, the listings and the metrics, none of which is
// on the data path; and one table per loop, read by that loop's sessions on
// every pub, state, up and join with no lock, and changed only by tasks the
// catalog's writers post to each loop (in the catalog's order: they post
// holding mu_). The lock is the catalog's alone and never taken by a session.
//
// Threads: the checks on the calling loop (its table); put, kick and list from
// any thread; the listener's calls come on the store's loops.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <boost/asio/steady_timer.hpp>

#include "cluster/sanctions.h"
#include "common/status.h"
#include "runtime/loop_group.h"

namespace parley::session {

class Gateway;

class Moderation final : private cluster::SanctionListener {
 public:
  Moderation(runtime::LoopGroup& loops, cluster::Sanctions& shared, Gateway& gateway);
  ~Moderation() override;

  // Hears the other nodes and reads what they hold; then reads it again every
  // few seconds (a lost note is caught up). Once the loops run.
  void start();
  void stop();

  // On the session's loop: when the mute (ban) of `user` in `ch`, or in the
  // whole tenant, in force at `now_ms` ends; 0: none.
  int64_t muted_until(unsigned loop, std::string_view tenant, std::string_view user,
                      std::string_view ch, int64_t now_ms) const;
  int64_t banned_until(unsigned loop, std::string_view tenant, std::string_view user,
                       std::string_view ch, int64_t now_ms) const;

  // Sets `s` (until_ms in the past: lifts it) for every node: stored where the
  // others read it, then in force here, then `done` runs on reply_loop (an
  // error: the store did not take it, and nothing changed). A new sanction
  // (not a lift, not one replacing another in force) is refused
  // quota_exceeded when its tenant has `cap` in force or being set already,
  // as this node knows them.
  void put(cluster::Sanction s, uint32_t cap, unsigned reply_loop, std::function<void(Status)> done);
  // Removes `k.user`'s connections from `k.ch` with a `kicked` frame, here and
  // on every other node; `done` gets this node's count, on reply_loop.
  void kick(cluster::Kick k, unsigned reply_loop, std::function<void(size_t)> done);

  // The sanctions in force at `now_ms` of `tenant`, by kind, tenant, user,
  // channel. Any thread.
  std::vector<cluster::Sanction> list(std::string_view tenant, int64_t now_ms) const;
  // In force at `now_ms`, by tenant (the metrics' samples).
  std::vector<std::pair<std::string, int64_t>> active(cluster::SanctionKind kind, int64_t now_ms) const;

 private:
  struct Entry {
    cluster::SanctionKind kind;
    std::string ch;
    int64_t until_ms;
  };
  // One loop's copy, keyed by tenant '\x1f' user.
  struct LoopTable {
    std::unordered_map<std::string, std::vector<Entry>> by_user;
  };
  struct Known {
    cluster::Sanction s;
    int64_t stamp = 0;  // steady_ns() of the change that set it here
  };

  void on_sanction(cluster::Sanction s) override;
  void on_kick(cluster::Kick k) override;
  void on_all(std::vector<cluster::Sanction> all, int64_t asked_at) override;

  // Into the catalog and every loop's table.
  void apply(const cluster::Sanction& s);
  void apply_locked(const cluster::Sanction& s, int64_t stamp);
  int64_t until(unsigned loop, cluster::SanctionKind kind, std::string_view tenant,
                std::string_view user, std::string_view ch, int64_t now_ms) const;
  void arm_refresh();

  runtime::LoopGroup& loops_;
  cluster::Sanctions& shared_;
  Gateway& gateway_;
  std::vector<std::unique_ptr<LoopTable>> tables_;
  mutable std::mutex mu_;  // the catalog
  std::unordered_map<std::string, Known> catalog_;  // by cluster::sanction_field
  // New sanctions admitted under their tenant's cap and not yet stored, by tenant:
  // counted with the catalog, so that puts at once cannot pass the cap together.
  std::unordered_map<std::string, uint32_t> pending_;
  boost::asio::steady_timer refresh_;  // on loop 0
  std::atomic<bool> stopped_{false};
};

}  // namespace parley::session
