#include "common/host_port.h"

#include <gtest/gtest.h>

namespace parley {
namespace {

TEST(HostPortTest, ParsesIpv4Ipv6AndLocalhost) {
  auto a = parse_host_port("127.0.0.1:7700");
  ASSERT_TRUE(a) << a.error().msg;
  EXPECT_EQ(a->ip, "127.0.0.1");
  EXPECT_EQ(a->port, 7700);
  EXPECT_FALSE(a->v6);
  auto b = parse_host_port("[::1]:0");
  ASSERT_TRUE(b) << b.error().msg;
  EXPECT_EQ(b->ip, "::1");
  EXPECT_EQ(b->port, 0);
  EXPECT_TRUE(b->v6);
  auto c = parse_host_port("localhost:65535");
  ASSERT_TRUE(c) << c.error().msg;
  EXPECT_EQ(c->ip, "127.0.0.1");
  EXPECT_EQ(c->port, 65535);
  auto d = parse_host_port("0.0.0.0:1");
  ASSERT_TRUE(d);
}

TEST(HostPortTest, RefusesHostNamesWithAClearMessage) {
  auto r = parse_host_port("example.com:0");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().msg.find("IP address or localhost, not a name"), std::string::npos)
      << r.error().msg;
}

TEST(HostPortTest, RefusesMalformedAddresses) {
  for (const char* s : {"", ":7700", "127.0.0.1", "127.0.0.1:", "127.0.0.1:65536",
                        "127.0.0.1:-1", "127.0.0.1:7x", "127.0.0.1: 7", "::1:7700", "[::1:7700",
                        "[]:7700", "[127.0.0.1]:7700", "256.0.0.1:7", "1.2.3:7"}) {
    EXPECT_FALSE(parse_host_port(s)) << s;
  }
}

}  // namespace
}  // namespace parley
