// What a server maps that it does not use (issue 12's idle RSS): a server on the
// embedded store never loads libpq, nor the GnuTLS/Kerberos/LDAP libraries libpq
// pulls in; the persister_test's servers and persisters (postgres configured) do.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "support/client.h"
#include "support/server_process.h"

namespace parley::testing {
namespace {

std::string maps_of(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/maps");
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(FootprintTest, EmbeddedStoreServerMapsNoPostgresClient) {
  ServerProcess server;
  server.start();
  auto c = connect_as(server.http_port(), "alice");
  ASSERT_EQ(op_of(c->join("chat:footprint")), "joined");
  c->send(pub_frame("chat:footprint", "m1", R"({"text":"hi"})", 2));
  ASSERT_NE(c->expect("ack"), "");
  const std::string maps = maps_of(server.pid());
  ASSERT_NE(maps.find("parley"), std::string::npos) << "no maps read";
  EXPECT_EQ(maps.find("libpq.so"), std::string::npos);
  EXPECT_EQ(maps.find("libgnutls"), std::string::npos);
  EXPECT_EQ(maps.find("libkrb5"), std::string::npos);
  EXPECT_EQ(maps.find("libldap"), std::string::npos);
}

}  // namespace
}  // namespace parley::testing
