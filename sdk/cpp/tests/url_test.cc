#include "asio/url.h"

#include <gtest/gtest.h>

namespace parley::detail {
namespace {

TEST(Url, WebSocketAndTcpForms) {
  auto ws = parse_url("ws://127.0.0.1:7700/v1/ws");
  ASSERT_TRUE(ws);
  EXPECT_EQ(ws->scheme, "ws");
  EXPECT_EQ(ws->host, "127.0.0.1");
  EXPECT_EQ(ws->port, "7700");
  EXPECT_EQ(ws->path, "/v1/ws");
  auto d = parse_url("ws://example.com");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->port, "80");
  EXPECT_EQ(d->path, "/");
  auto wss = parse_url("WSS://play.example.com/v1/ws");
  ASSERT_TRUE(wss);
  EXPECT_EQ(wss->scheme, "wss");
  EXPECT_EQ(wss->port, "443");
  EXPECT_EQ(wss->path, "/v1/ws");
  auto tcp = parse_url("tcp://[::1]:7701");
  ASSERT_TRUE(tcp);
  EXPECT_EQ(tcp->host, "::1");
  EXPECT_EQ(tcp->port, "7701");
}

TEST(Url, RefusesWhatItCannotDial) {
  for (const char* bad : {"", "127.0.0.1:7700", "http://x/", "wss:/x/", "tcp://x", "tcp://x:1/p", "ws://:80/",
                          "ws://x:0/", "ws://x:65536/", "ws://x:12a/", "tcp://[::1:7"}) {
    EXPECT_FALSE(parse_url(bad)) << bad;
  }
}

}  // namespace
}  // namespace parley::detail
