#include "session/moderation.h"

#include <algorithm>
#include <chrono>
#include <tuple>

#include <fmt/format.h>

#include "cluster/sanction_codec.h"
#include "common/clock.h"
#include "session/gateway.h"

namespace parley::session {

namespace {

using cluster::Sanction;
using cluster::SanctionKind;

// How often the whole set is read again from the other nodes' store: a lost
// note is made good within this.
constexpr auto kRefresh = std::chrono::seconds(5);
// A lifted sanction is remembered this long, so that a read of the whole set
// that started before the lift cannot bring it back.
constexpr int64_t kTombstoneNs = 60'000'000'000;

void user_key(std::string& k, std::string_view tenant, std::string_view user) {
  k.assign(tenant);
  k += '\x1f';
  k.append(user);
}

}  // namespace

Moderation::Moderation(runtime::LoopGroup& loops, cluster::Sanctions& shared, Gateway& gateway)
    : loops_(loops), shared_(shared), gateway_(gateway), refresh_(loops.loop(0)) {
  for (unsigned i = 0; i < loops.size(); ++i) tables_.push_back(std::make_unique<LoopTable>());
}

Moderation::~Moderation() = default;

void Moderation::start() {
  shared_.listen(*this);
  loops_.run_on(0, [this] { arm_refresh(); });
}

void Moderation::stop() {
  stopped_.store(true);
  loops_.run_on(0, [this] { refresh_.cancel(); });
}

void Moderation::arm_refresh() {
  if (stopped_.load()) return;
  refresh_.expires_after(kRefresh);
  refresh_.async_wait([this](boost::system::error_code ec) {
    if (ec || stopped_.load()) return;
    shared_.reload();
    arm_refresh();
  });
}

int64_t Moderation::until(unsigned loop, SanctionKind kind, std::string_view tenant,
                          std::string_view user, std::string_view ch, int64_t now_ms) const {
  LoopTable& t = *tables_[loop];
  if (t.by_user.empty()) return 0;  // the common case: nobody sanctioned here
  thread_local std::string key;
  user_key(key, tenant, user);
  auto it = t.by_user.find(key);
  if (it == t.by_user.end()) return 0;
  // What has run out goes now: a node alone never reads the whole set again.
  std::erase_if(it->second, [now_ms](const Entry& e) { return e.until_ms <= now_ms; });
  int64_t longest = 0;
  for (const Entry& e : it->second) {
    if (e.kind == kind && (e.ch.empty() || e.ch == ch)) longest = std::max(longest, e.until_ms);
  }
  if (it->second.empty()) t.by_user.erase(it);
  return longest;
}

int64_t Moderation::muted_until(unsigned loop, std::string_view tenant, std::string_view user,
                                std::string_view ch, int64_t now_ms) const {
  return until(loop, SanctionKind::kMute, tenant, user, ch, now_ms);
}

int64_t Moderation::banned_until(unsigned loop, std::string_view tenant, std::string_view user,
                                 std::string_view ch, int64_t now_ms) const {
  return until(loop, SanctionKind::kBan, tenant, user, ch, now_ms);
}

void Moderation::put(Sanction s, uint32_t cap, unsigned reply_loop, std::function<void(Status)> done) {
  auto answer = [this, reply_loop](std::function<void(Status)> done, Status st) {
    loops_.run_on(reply_loop, [done = std::move(done), st = std::move(st)]() mutable { done(std::move(st)); });
  };
  const int64_t now_ms = wall_ms();
  bool reserved = false;
  if (s.until_ms > now_ms) {
    std::lock_guard lock(mu_);
    auto same = catalog_.find(cluster::sanction_field(s));
    if (same == catalog_.end() || same->second.s.until_ms <= now_ms) {
      const auto p = pending_.find(s.tenant);
      size_t n = p == pending_.end() ? 0 : p->second;
      for (const auto& [field, k] : catalog_) n += k.s.tenant == s.tenant && k.s.until_ms > now_ms;
      if (n >= cap) {
        return answer(std::move(done), Error{ErrorCode::kQuotaExceeded,
                                             fmt::format("too many sanctions in force (max_sanctions {})", cap)});
      }
      ++pending_[s.tenant];
      reserved = true;
    }
  }
  shared_.put(s, [this, s, reserved, answer, done = std::move(done)](Status st) mutable {
    {
      // Stored and no longer pending in one step: a put counting meanwhile sees it once.
      std::lock_guard lock(mu_);
      if (st) apply_locked(s, steady_ns());
      if (reserved && --pending_[s.tenant] == 0) pending_.erase(s.tenant);
    }
    // Posted after apply's tasks: by the answer, every loop here enforces it.
    answer(std::move(done), std::move(st));
  });
}

void Moderation::kick(cluster::Kick k, unsigned reply_loop, std::function<void(size_t)> done) {
  shared_.kick(k);
  gateway_.kick(k.tenant, k.user, k.ch, k.reason, reply_loop, std::move(done));
}

void Moderation::on_sanction(Sanction s) { apply(s); }

void Moderation::on_kick(cluster::Kick k) {
  gateway_.kick(k.tenant, k.user, k.ch, k.reason, 0, [](size_t) {});
}

void Moderation::apply(const Sanction& s) {
  std::lock_guard lock(mu_);
  apply_locked(s, steady_ns());
}

void Moderation::apply_locked(const Sanction& s, int64_t stamp) {
  const int64_t now_ms = wall_ms();
  std::erase_if(catalog_, [&](const auto& kv) {
    const Known& k = kv.second;
    return k.s.until_ms == 0 ? stamp - k.stamp >= kTombstoneNs : k.s.until_ms <= now_ms;
  });
  // A lift stays as a tombstone (until_ms 0) for on_all.
  Known& k = catalog_[cluster::sanction_field(s)];
  k.s = s;
  if (s.until_ms <= now_ms) k.s.until_ms = 0;
  k.stamp = stamp;
  const Sanction applied = k.s;
  for (unsigned i = 0; i < loops_.size(); ++i) {
    loops_.run_on(i, [t = tables_[i].get(), s = applied] {
      std::string key;
      user_key(key, s.tenant, s.user);
      auto& entries = t->by_user[key];
      std::erase_if(entries, [&](const Entry& e) { return e.kind == s.kind && e.ch == s.ch; });
      if (s.until_ms > 0) entries.push_back(Entry{s.kind, s.ch, s.until_ms});
      if (entries.empty()) t->by_user.erase(key);
    });
  }
}

void Moderation::on_all(std::vector<Sanction> all, int64_t asked_at) {
  std::lock_guard lock(mu_);
  const int64_t now_ns = steady_ns();
  std::unordered_map<std::string, Known> next;
  for (auto& s : all) {
    std::string field = cluster::sanction_field(s);
    auto mine = catalog_.find(field);
    if (mine != catalog_.end() && mine->second.stamp >= asked_at) continue;  // changed here since
    next[std::move(field)] = Known{std::move(s), asked_at};
  }
  // What this node changed since the read began stands, lifts included; older
  // lifts are forgotten once no read can still be behind them.
  for (auto& [field, k] : catalog_) {
    if (k.stamp >= asked_at || (k.s.until_ms == 0 && now_ns - k.stamp < kTombstoneNs)) {
      next.insert_or_assign(field, k);
    }
  }
  catalog_ = std::move(next);
  auto snapshot = std::make_shared<std::vector<Sanction>>();
  for (const auto& [field, k] : catalog_) {
    if (k.s.until_ms > 0) snapshot->push_back(k.s);
  }
  for (unsigned i = 0; i < loops_.size(); ++i) {
    loops_.run_on(i, [t = tables_[i].get(), snapshot] {
      t->by_user.clear();
      std::string key;
      for (const auto& s : *snapshot) {
        user_key(key, s.tenant, s.user);
        t->by_user[key].push_back(Entry{s.kind, s.ch, s.until_ms});
      }
    });
  }
}

std::vector<Sanction> Moderation::list(std::string_view tenant, int64_t now_ms) const {
  std::vector<Sanction> out;
  {
    std::lock_guard lock(mu_);
    for (const auto& [field, k] : catalog_) {
      if (k.s.until_ms > now_ms && (tenant.empty() || k.s.tenant == tenant)) out.push_back(k.s);
    }
  }
  std::sort(out.begin(), out.end(), [](const Sanction& a, const Sanction& b) {
    return std::tie(a.kind, a.tenant, a.user, a.ch) < std::tie(b.kind, b.tenant, b.user, b.ch);
  });
  return out;
}

std::vector<std::pair<std::string, int64_t>> Moderation::active(SanctionKind kind, int64_t now_ms) const {
  std::unordered_map<std::string, int64_t> by_tenant;
  {
    std::lock_guard lock(mu_);
    for (const auto& [field, k] : catalog_) {
      if (k.s.kind == kind && k.s.until_ms > now_ms) ++by_tenant[k.s.tenant];
    }
  }
  std::vector<std::pair<std::string, int64_t>> out(by_tenant.begin(), by_tenant.end());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace parley::session
