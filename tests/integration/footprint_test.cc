// What a server maps that it does not use (issue 12's idle RSS): a server on the
// embedded store never loads libpq, nor the GnuTLS/Kerberos/LDAP libraries libpq
// pulls in (the persister_test's servers and persisters, postgres configured, do);
// the pages start-up alone touched are given back once it is ready, and it serves
// on afterwards.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <thread>
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

TEST(FootprintTest, StartUpPagesAreGivenBackAndTheServerServesOn) {
  ServerSpec spec;
  spec.log_level = "debug";
  ServerProcess server(spec);
  server.start();
  const std::string marker = "start-up pages given back: ";
  std::string log;
  for (int i = 0; i < 500 && log.find(marker) == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    log = server.log();
  }
  const size_t at = log.find(marker);
  ASSERT_NE(at, std::string::npos) << log;
  // Start-up maps most of the binary's 7.5 MiB of text: well over 1 MiB goes back.
  EXPECT_GT(std::strtoull(log.c_str() + at + marker.size(), nullptr, 10), 1024u) << log;
  auto c = connect_as(server.http_port(), "alice");
  ASSERT_EQ(op_of(c->join("chat:after")), "joined");
  c->send(pub_frame("chat:after", "m1", R"({"text":"hi"})", 2));
  EXPECT_NE(c->expect("ack"), "");
}

}  // namespace
}  // namespace parley::testing
