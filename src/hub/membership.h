// Membership: a connection's place in one channel, as a handle the session owns.
// Destroying the handle (or leave()) leaves the channel: the member stops receiving
// at once and the owning shard forgets it (presence, publish rights). Moving it is
// fine. Like the sessions of Beast's chat example, which live in one shared_state,
// every table a member is in belongs to the hub; a session never edits one itself.
//
// Threading: a handle is used on its member's loop only (the session's). The
// MemberLink it shares with the hub's tasks is touched on that loop only too: the
// shard carries the pointer across but never reads it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "store/channel_id.h"
#include "tenant/tenant_config.h"

namespace parley::hub {

class Hub;

struct MemberLink {
  const TenantConfig* tenant = nullptr;
  store::ChannelId id;
  std::string fanout_key;  // id.key(), as the member loop's TickBatcher knows it
  uint64_t conn = 0;
  unsigned loop = 0;
  uint32_t tick_ms = 0;
  bool registered = false;  // in the loop's TickBatcher
  bool left = false;        // the handle left: nothing registers it again
};

class Membership {
 public:
  Membership() = default;
  Membership(Membership&& o) noexcept : hub_(o.hub_), link_(std::move(o.link_)) {}
  Membership& operator=(Membership&& o) noexcept {
    if (this != &o) {
      leave();
      hub_ = o.hub_;
      link_ = std::move(o.link_);
    }
    return *this;
  }
  Membership(const Membership&) = delete;
  Membership& operator=(const Membership&) = delete;
  ~Membership() { leave(); }

  // Leaves the channel (idempotent). On the member's loop.
  void leave();
  bool active() const { return link_ != nullptr && !link_->left; }
  const store::ChannelId& channel() const { return link_->id; }

 private:
  friend class Hub;
  Membership(Hub* hub, std::shared_ptr<MemberLink> link) : hub_(hub), link_(std::move(link)) {}

  Hub* hub_ = nullptr;
  std::shared_ptr<MemberLink> link_;
};

}  // namespace parley::hub
