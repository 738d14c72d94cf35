// Out of file descriptors (docs/operations.md "File descriptors"): a server under
// RLIMIT_NOFILE 1024 with 1,124 idle TCP connections to its HTTP port keeps
// writing: sockets are capped below the limit, so RocksDB still gets descriptors
// for its next WAL and table files.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <boost/asio/ip/tcp.hpp>
#include <memory>
#include <string>
#include <vector>

#include "support/client.h"
#include "support/server_process.h"

namespace parley::testing {
namespace {

using namespace std::chrono_literals;

TEST(FdLimitTest, IdleSocketsAtTheLimitLeaveTheStoreItsDescriptors) {
  struct rlimit rl {};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &rl), 0);
  if (rl.rlim_max < 4096) GTEST_SKIP() << "this test opens ~1,200 sockets";
  rl.rlim_cur = std::max<rlim_t>(rl.rlim_cur, 4096);
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &rl), 0);

  ServerProcess server(spec_with_tenants(
      default_tenants_toml("publish_per_sec = 0\npublish_per_conn_sec = 0\n")));
  server.set_fd_limit(1024);
  server.start();
  auto c = connect_as(server.http_port(), "alice");
  ASSERT_EQ(op_of(c->join("chat:fd")), "joined");

  boost::asio::io_context io;
  std::vector<std::unique_ptr<boost::asio::ip::tcp::socket>> idle;
  for (int i = 0; i < 1124; ++i) {
    auto s = std::make_unique<boost::asio::ip::tcp::socket>(io);
    boost::system::error_code ec;
    s->connect({boost::asio::ip::make_address("127.0.0.1"), server.http_port()}, ec);
    if (!ec) idle.push_back(std::move(s));
  }

  // ~24 MB of messages: several memtable switches, each a new WAL and table file.
  const std::string body = R"({"pad":")" + std::string(2000, 'f') + "\"}";
  int64_t last = 0;
  std::string refused;
  for (int i = 1; i <= 12000 && refused.empty(); ++i) {
    c->send(pub_frame("chat:fd", "f" + std::to_string(i), body));
    for (;;) {
      auto o = c->next(10s);
      if (!o) {
        refused = "no answer";
        break;
      }
      if (op_of(*o) == "ack") {
        last = json_int(*o, "seq").value_or(-1);
        break;
      }
      if (op_of(*o) == "error") {
        refused = *o;
        break;
      }
    }
  }
  EXPECT_EQ(refused, "") << "after " << last << " acks\n" << server.log();
  EXPECT_EQ(last, 12000);
  idle.clear();
}

}  // namespace
}  // namespace parley::testing
