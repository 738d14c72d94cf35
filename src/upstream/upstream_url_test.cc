#include "upstream/upstream_url.h"

#include <gtest/gtest.h>

namespace parley::upstream {
namespace {

TEST(UpstreamUrl, HostPortAndPath) {
  auto u = parse_upstream_url("http://127.0.0.1:9000/events");
  ASSERT_TRUE(u.is_ok());
  EXPECT_EQ(u->host, "127.0.0.1");
  EXPECT_EQ(u->port, 9000);
  EXPECT_EQ(u->target, "/events");
  EXPECT_EQ(u->host_header, "127.0.0.1:9000");
}

TEST(UpstreamUrl, DefaultsToPort80AndSlash) {
  auto u = parse_upstream_url("http://app.internal");
  ASSERT_TRUE(u.is_ok());
  EXPECT_EQ(u->host, "app.internal");
  EXPECT_EQ(u->port, 80);
  EXPECT_EQ(u->target, "/");
}

TEST(UpstreamUrl, QueryIsKeptInTheTarget) {
  auto u = parse_upstream_url("http://h:1?k=v");
  ASSERT_TRUE(u.is_ok());
  EXPECT_EQ(u->target, "/?k=v");
  EXPECT_EQ(u->port, 1);
}

TEST(UpstreamUrl, BracketedIpv6) {
  auto u = parse_upstream_url("http://[::1]:8080/x");
  ASSERT_TRUE(u.is_ok());
  EXPECT_EQ(u->host, "::1");
  EXPECT_EQ(u->port, 8080);
  EXPECT_EQ(u->host_header, "[::1]:8080");
}

TEST(UpstreamUrl, RejectsWhatCannotBeRequested) {
  for (const char* bad : {"https://h/x", "http://", "http://:80/x", "http://h:0/", "http://h:70000/",
                          "http://h:x/", "http://u:p@h/", "http://h/a b", "http://::1/x",
                          "http://[::1/x", "http://h\x01/"}) {
    EXPECT_FALSE(parse_upstream_url(bad).is_ok()) << bad;
  }
}

}  // namespace
}  // namespace parley::upstream
