// WsConnection over a real loopback socket whose peer never reads.
#include "net/ws_connection.h"

#include <gtest/gtest.h>
#include <sys/socket.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <string>

namespace parley::net {
namespace {

class NullHandler final : public ConnectionHandler {
 public:
  void on_frame(std::string_view, bool) override {}
  void on_closed() override {}
};

// A masked client ping (mask key 0) with a 125-byte payload.
std::string ping_frame() {
  std::string f = "\x89";
  f += static_cast<char>(0x80 | 125);
  f.append(4, '\0');
  f.append(125, 'p');
  return f;
}

TEST(WsConnectionPongs, APeerThatPingsWithoutReadingCannotGrowTheQueuePastItsCap) {
  using tcp = boost::asio::ip::tcp;
  boost::asio::io_context io;
  tcp::acceptor acceptor(io, tcp::endpoint(boost::asio::ip::address_v4::loopback(), 0));
  tcp::socket peer(io);
  peer.connect(acceptor.local_endpoint());
  tcp::socket ours(io);
  acceptor.accept(ours);
  // Small kernel buffers on both sides, so the server's queue is where pongs pile up.
  ours.set_option(boost::asio::socket_base::send_buffer_size(4096));
  peer.set_option(boost::asio::socket_base::receive_buffer_size(4096));

  metrics::ThreadMetrics metrics;
  auto ws = std::make_shared<WsConnection>(std::move(ours), 0, metrics, 1 << 16, "");
  constexpr uint64_t kCap = 4096;
  ws->set_queue_cap(kCap);
  ws->start(std::make_shared<NullHandler>());

  std::string pings;
  for (int i = 0; i < 200; ++i) pings += ping_frame();
  uint64_t most_queued = 0;
  for (int round = 0; round < 20; ++round) {  // 4,000 pings, ~0.5 MB of pongs asked for
    boost::asio::write(peer, boost::asio::buffer(pings));
    io.run_for(std::chrono::milliseconds(20));
    most_queued = std::max(most_queued, ws->queued_bytes());
  }
  EXPECT_GT(most_queued, 0u) << "the kernel buffers never filled: the test proves nothing";
  EXPECT_LE(most_queued, kCap + 125);
  EXPECT_FALSE(ws->closing());  // skipped pongs are not an error
}

}  // namespace
}  // namespace parley::net
