// A wait for a socket to become readable that costs no epoll_ctl per wait.
//
// Asio's socket::async_wait(wait_read) re-arms the descriptor with
// EPOLL_CTL_MOD on every call (Boost 1.74's epoll_reactor::start_op takes its
// non-speculative path), one syscall per message read (issue 9). The reactor
// registers every socket once for EPOLLIN | EPOLLET and remembers, per
// descriptor, whether an edge arrived that no operation consumed
// (try_speculative_). This wait is a reactor operation of its own that
// "consumes" the readiness it is woken for (its perform() reports
// done_and_exhausted): the next wait then queues without a syscall, and a wait
// started after an edge nobody consumed completes at once. That is the
// edge-triggered contract, so the caller must read until the socket is empty
// (EAGAIN, or a short read on a stream) before waiting again; after a read
// that may have left bytes behind, use socket::async_wait (level: the MOD
// re-reports what is pending).
//
// The operation is embedded (no allocation per wait; an idle connection holds
// it instead of Asio's heap-allocated wait op) and keeps its owner alive while
// queued. One wait at a time. Runs on the socket's loop.
//
// It uses Asio's detail layer (epoll_reactor::start_op, reactor_op), checked
// against Boost 1.74 only; elsewhere arm() falls back to async_wait.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <boost/version.hpp>
#include <memory>

#if BOOST_VERSION == 107400 && defined(BOOST_ASIO_HAS_EPOLL)
#define PARLEY_READ_WAIT_NATIVE 1
#include <boost/asio/detail/epoll_reactor.hpp>
#include <boost/asio/detail/reactor_op.hpp>
#else
#define PARLEY_READ_WAIT_NATIVE 0
#endif

namespace parley::net {

class ReadWait
#if PARLEY_READ_WAIT_NATIVE
    : private boost::asio::detail::reactor_op
#endif
{
 public:
  // Called once per arm(), on the loop: ok = false when the wait was
  // cancelled or the socket closed.
  using Callback = void (*)(void* arg, bool ok);

  ReadWait();
  ReadWait(const ReadWait&) = delete;
  ReadWait& operator=(const ReadWait&) = delete;

  // Waits for `socket` to have bytes (or an error, or EOF) and calls
  // cb(arg, ok); `keep` (the owner) is held until then.
  void arm(boost::asio::ip::tcp::socket& socket, std::shared_ptr<void> keep, Callback cb,
           void* arg);
  bool armed() const { return keep_ != nullptr; }

 private:
#if PARLEY_READ_WAIT_NATIVE
  static status perform(boost::asio::detail::reactor_op*);
  static void complete(void* owner, boost::asio::detail::scheduler_operation* base,
                       const boost::system::error_code&, std::size_t);
#endif
#if PARLEY_READ_WAIT_NATIVE
  boost::asio::detail::epoll_reactor* reactor_ = nullptr;  // the socket's, looked up once
#endif
  std::shared_ptr<void> keep_;
  Callback cb_ = nullptr;
  void* arg_ = nullptr;
};

}  // namespace parley::net
