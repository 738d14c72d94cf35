#include "net/read_wait.h"

#include <boost/asio/execution/context.hpp>
#include <boost/asio/query.hpp>
#include <utility>

namespace parley::net {

#if PARLEY_READ_WAIT_NATIVE

namespace {
namespace detail = boost::asio::detail;
using Socket = boost::asio::ip::tcp::socket;

// The socket's implementation is a protected member of basic_socket; a
// pointer to it, named through a derived class, reaches it legally.
struct SocketAccess : Socket {
  static auto& impl(Socket& s) {
    constexpr auto member = &SocketAccess::impl_;
    return (s.*member).get_implementation();
  }
};
}  // namespace

ReadWait::ReadWait()
    : detail::reactor_op(boost::system::error_code(), &ReadWait::perform, &ReadWait::complete) {}

detail::reactor_op::status ReadWait::perform(detail::reactor_op*) {
  // Woken (or started after an edge nobody consumed): the readiness is the
  // caller's now, which reads until the socket is empty.
  return done_and_exhausted;
}

void ReadWait::complete(void* owner, detail::scheduler_operation* base,
                        const boost::system::error_code&, std::size_t) {
  auto* self = static_cast<ReadWait*>(base);
  // Taken first: the callback may arm again, and `keep` may own this object.
  std::shared_ptr<void> keep = std::move(self->keep_);
  const bool ok = !self->ec_;
  if (owner) self->cb_(self->arg_, ok);  // null: the io_context is being destroyed
}

void ReadWait::arm(Socket& socket, std::shared_ptr<void> keep, Callback cb, void* arg) {
  keep_ = std::move(keep);
  cb_ = cb;
  arg_ = arg;
  ec_ = boost::system::error_code();
  auto& impl = SocketAccess::impl(socket);
  if (!reactor_) {
    auto& ctx = boost::asio::query(socket.get_executor(), boost::asio::execution::context);
    reactor_ = &boost::asio::use_service<detail::epoll_reactor>(ctx);
  }
  // allow_speculative: queued without a syscall unless an unconsumed edge is
  // pending, in which case it completes at once (posted).
  reactor_->start_op(detail::epoll_reactor::read_op, impl.socket_, impl.reactor_data_, this,
                   /*is_continuation=*/true, /*allow_speculative=*/true);
}

#else

ReadWait::ReadWait() = default;

void ReadWait::arm(boost::asio::ip::tcp::socket& socket, std::shared_ptr<void> keep, Callback cb,
                   void* arg) {
  keep_ = std::move(keep);
  socket.async_wait(boost::asio::ip::tcp::socket::wait_read,
                    [this, cb, arg](boost::system::error_code ec) {
                      std::shared_ptr<void> keep = std::move(keep_);
                      cb(arg, !ec);
                    });
}

#endif

}  // namespace parley::net
