// Moderation shared by the nodes of a deployment (PROTOCOL.md "Moderation:
// mute, kick, ban"): the mutes and bans in force, kept where every node can
// read them, and the kicks every node must carry out. Each node keeps its own
// copy of the sanctions to check ops against (session/moderation.h); this is
// how the copies hear of each other's changes.
//
// Threads: any thread calls in; `done` and the listener run on any thread
// (the store's loops), never the caller's: they post.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/status.h"

namespace parley::cluster {

enum class SanctionKind : uint8_t { kMute, kBan };

struct Sanction {
  SanctionKind kind = SanctionKind::kMute;
  std::string tenant;
  std::string ch;    // empty: every channel of the tenant
  std::string user;
  int64_t until_ms = 0;  // wall clock; not after now: lifted

  bool operator==(const Sanction&) const = default;
};

struct Kick {
  std::string tenant;
  std::string ch;
  std::string user;
  std::string reason;
};

// What a node hears of the others (never of its own puts and kicks).
class SanctionListener {
 public:
  virtual ~SanctionListener() = default;
  // Another node set or lifted one.
  virtual void on_sanction(Sanction s) = 0;
  // Another node kicked `k.user` out of `k.ch`: this node's connections go too.
  virtual void on_kick(Kick k) = 0;
  // Every sanction in force, read whole (at start, after a lost subscription,
  // and now and then): what the node holds becomes this, except what it
  // changed itself since `asked_at` (a steady_ns() stamp of the read's start).
  virtual void on_all(std::vector<Sanction> all, int64_t asked_at) = 0;
};

class Sanctions {
 public:
  virtual ~Sanctions() = default;
  // Once, before any other call; `l` outlives this.
  virtual void listen(SanctionListener& l) = 0;
  // Stores `s` (or lifts it, until_ms in the past) for every node, then tells
  // the others; `done` hears whether it was stored.
  virtual void put(const Sanction& s, std::function<void(Status)> done) = 0;
  // Tells the other nodes (fire and forget).
  virtual void kick(const Kick& k) = 0;
  // Reads every sanction in force again (the listener's on_all); nothing
  // where this node is alone.
  virtual void reload() = 0;
};

}  // namespace parley::cluster
