// What connections that have not authenticated yet may hold, process-wide:
//
// - bytes in read buffers (issue 11, finding 5). Before `hello`, each
//   connection's frame limit is small (server.preauth_frame_bytes), but
//   thousands of sockets each holding the start of a frame still add up:
//   their total is charged here, and a connection whose new bytes would pass
//   the limit is refused.
// - sockets (issue 26). A socket that has not said `hello` (WebSocket, TCP,
//   Unix) or sent a whole HTTP request holds a PreauthTicket, counted here and
//   not against max_connections, so idle sockets cannot keep players out.
//   At the global limit (server.preauth_max_connections) or its address's
//   (server.preauth_max_per_address), admitting a new socket sheds the oldest
//   unauthenticated one (of that address, at the address's limit): holding
//   sockets open only pushes the holder's own older sockets out, and a new
//   client is admitted at once.
//
// Any thread. Bytes: one atomic counter. Sockets: a mutex around the table of
// tickets in the order they were admitted, taken once per accept, per
// authentication and per close (never per frame). A shed ticket's callback
// runs on the admitting thread, outside the lock; it must post to its
// connection's loop.
#pragma once

#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>

namespace parley::net {

class PreauthBudget;

// One unauthenticated socket's place in the budget. Move-only; releasing (or
// destroying) it gives the place back. Touched on its connection's loop.
class PreauthTicket {
 public:
  PreauthTicket() = default;
  PreauthTicket(PreauthTicket&& o) noexcept : budget_(o.budget_), id_(o.id_) { o.budget_ = nullptr; }
  PreauthTicket& operator=(PreauthTicket&& o) noexcept;
  PreauthTicket(const PreauthTicket&) = delete;
  PreauthTicket& operator=(const PreauthTicket&) = delete;
  ~PreauthTicket() { release(); }

  explicit operator bool() const { return budget_ != nullptr; }
  // What to do when a newer socket sheds this one: called once, on the
  // admitting thread (post to the owner's loop and close there). Replaces an
  // earlier callback (an HTTP connection's ticket moves on to its WebSocket).
  void on_shed(std::function<void()> fn);
  void release();

 private:
  friend class PreauthBudget;
  PreauthTicket(PreauthBudget* budget, uint64_t id) : budget_(budget), id_(id) {}
  PreauthBudget* budget_ = nullptr;
  uint64_t id_ = 0;
};

class PreauthBudget {
 public:
  // The process's budget (one server per process).
  static PreauthBudget& process();

  // ---- bytes of read buffers ----
  void set_limit(uint64_t bytes) { limit_.store(bytes, std::memory_order_relaxed); }
  uint64_t limit() const { return limit_.load(std::memory_order_relaxed); }
  uint64_t held() const {
    const int64_t h = held_.load(std::memory_order_relaxed);
    return h > 0 ? static_cast<uint64_t>(h) : 0;
  }

  // Charges `delta` bytes (negative releases). False when a positive charge
  // took the total past the limit: the bytes stay charged until released.
  bool charge(int64_t delta) {
    const int64_t now = held_.fetch_add(delta, std::memory_order_relaxed) + delta;
    return delta <= 0 || now <= static_cast<int64_t>(limit());
  }

  // ---- sockets ----
  // Both at least 1 (the config validates).
  void set_socket_limits(uint32_t max_sockets, uint32_t max_per_address);
  uint32_t max_sockets() const;
  uint32_t max_per_address() const;

  // Admits a new unauthenticated socket from `address` (any bytes naming the
  // peer: its IP, or "unix"), shedding the oldest one first where a limit is
  // reached. Never refuses.
  PreauthTicket admit(const std::string& address);

  size_t sockets() const;
  // Sockets shed to admit newer ones: at the global limit, at an address's limit.
  uint64_t shed_global() const { return shed_global_.load(std::memory_order_relaxed); }
  uint64_t shed_per_address() const { return shed_per_address_.load(std::memory_order_relaxed); }

 private:
  friend class PreauthTicket;
  struct Entry {
    std::string address;
    std::function<void()> on_shed;
  };
  void release(uint64_t id);
  void set_on_shed(uint64_t id, std::function<void()> fn);
  // Under mu_: removes `id`, returning its callback.
  std::function<void()> remove_locked(uint64_t id);

  std::atomic<int64_t> held_{0};
  std::atomic<uint64_t> limit_{64ull << 20};

  mutable std::mutex mu_;
  uint64_t next_id_ = 1;                                       // admission order
  std::map<uint64_t, Entry> entries_;                          // oldest first
  std::unordered_map<std::string, std::set<uint64_t>> by_address_;  // oldest first
  uint32_t max_sockets_ = 2048;
  uint32_t max_per_address_ = 512;
  std::atomic<uint64_t> shed_global_{0};
  std::atomic<uint64_t> shed_per_address_{0};
};

// A TCP peer's address as PreauthBudget::admit keys it (an IPv4-mapped IPv6
// address counts as its IPv4 one); "" when the socket has no peer any more.
std::string peer_address(const boost::asio::ip::tcp::socket& socket);
// Every Unix-socket peer: one address.
inline constexpr const char* kUnixPeer = "unix";

}  // namespace parley::net
