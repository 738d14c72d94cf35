#include "net/preauth_budget.h"

#include <utility>
#include <vector>

namespace parley::net {

PreauthTicket& PreauthTicket::operator=(PreauthTicket&& o) noexcept {
  if (this != &o) {
    release();
    budget_ = o.budget_;
    id_ = o.id_;
    o.budget_ = nullptr;
  }
  return *this;
}

void PreauthTicket::on_shed(std::function<void()> fn) {
  if (budget_) budget_->set_on_shed(id_, std::move(fn));
}

void PreauthTicket::release() {
  if (!budget_) return;
  budget_->release(id_);
  budget_ = nullptr;
}

PreauthBudget& PreauthBudget::process() {
  static PreauthBudget budget;
  return budget;
}

void PreauthBudget::set_socket_limits(uint32_t max_sockets, uint32_t max_per_address) {
  std::lock_guard lock(mu_);
  max_sockets_ = max_sockets > 0 ? max_sockets : 1;
  max_per_address_ = max_per_address > 0 ? max_per_address : 1;
}

uint32_t PreauthBudget::max_sockets() const {
  std::lock_guard lock(mu_);
  return max_sockets_;
}

uint32_t PreauthBudget::max_per_address() const {
  std::lock_guard lock(mu_);
  return max_per_address_;
}

size_t PreauthBudget::sockets() const {
  std::lock_guard lock(mu_);
  return entries_.size();
}

std::function<void()> PreauthBudget::remove_locked(uint64_t id) {
  auto it = entries_.find(id);
  if (it == entries_.end()) return {};
  auto addr = by_address_.find(it->second.address);
  if (addr != by_address_.end()) {
    addr->second.erase(id);
    if (addr->second.empty()) by_address_.erase(addr);
  }
  std::function<void()> fn = std::move(it->second.on_shed);
  entries_.erase(it);
  return fn;
}

PreauthTicket PreauthBudget::admit(const std::string& address) {
  std::vector<std::function<void()>> shed;
  uint64_t id = 0;
  {
    std::lock_guard lock(mu_);
    for (;;) {
      auto mine = by_address_.find(address);
      if (mine == by_address_.end() || mine->second.size() < max_per_address_) break;
      shed.push_back(remove_locked(*mine->second.begin()));
      shed_per_address_.fetch_add(1, std::memory_order_relaxed);
    }
    while (entries_.size() >= max_sockets_) {
      shed.push_back(remove_locked(entries_.begin()->first));
      shed_global_.fetch_add(1, std::memory_order_relaxed);
    }
    id = next_id_++;
    entries_.emplace(id, Entry{address, {}});
    by_address_[address].insert(id);
  }
  for (auto& fn : shed) {
    if (fn) fn();
  }
  return PreauthTicket(this, id);
}

void PreauthBudget::release(uint64_t id) {
  std::function<void()> fn;
  {
    std::lock_guard lock(mu_);
    fn = remove_locked(id);
  }
  // Destroyed outside the lock: it may hold the last reference to a connection.
}

void PreauthBudget::set_on_shed(uint64_t id, std::function<void()> fn) {
  std::function<void()> replaced;
  {
    std::lock_guard lock(mu_);
    auto it = entries_.find(id);
    if (it != entries_.end()) {
      replaced = std::exchange(it->second.on_shed, std::move(fn));
      return;
    }
  }
  // Shed before its owner said what to do: the owner learns now.
  if (fn) fn();
}

std::string peer_address(const boost::asio::ip::tcp::socket& socket) {
  boost::system::error_code ec;
  const auto ep = socket.remote_endpoint(ec);
  if (ec) return {};
  auto addr = ep.address();
  if (addr.is_v6() && addr.to_v6().is_v4_mapped()) {
    addr = boost::asio::ip::make_address_v4(boost::asio::ip::v4_mapped, addr.to_v6());
  }
  if (addr.is_v4()) {
    const auto b = addr.to_v4().to_bytes();
    return std::string(reinterpret_cast<const char*>(b.data()), b.size());
  }
  const auto b = addr.to_v6().to_bytes();
  return std::string(reinterpret_cast<const char*>(b.data()), b.size());
}

}  // namespace parley::net
