// RFC 6455 conformance, part 4: the opening handshake (section 4) and Origin
// (section 10.2, with Parley's allowed_origins rules from docs/protocol-notes.md).
#include <cctype>

#include "integration/ws_conformance.h"

namespace parley::testing {
namespace {

class WsHandshake : public ::testing::Test {
 protected:
  uint16_t port() { return shared_server().http_port(); }
  // Sends `request` on a fresh connection; the response head, or status 0.
  HttpHead ask(const std::string& request) {
    auto ws = RawWs::connect(port());
    return ws->http(request).value_or(HttpHead{});
  }
};

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

TEST_F(WsHandshake, UpgradeIsAnsweredWith101AndTheAcceptKey) {
  const auto head = ask(RawWs::upgrade_request());
  EXPECT_EQ(head.status, 101);
  EXPECT_EQ(lower(head.header("upgrade").value_or("")), "websocket");
  EXPECT_NE(lower(head.header("connection").value_or("")).find("upgrade"), std::string::npos);
  EXPECT_EQ(head.header("sec-websocket-accept"), RawWs::kSampleAccept);
}

TEST_F(WsHandshake, UpgradedConnectionSpeaksTheProtocol) {
  auto ws = RawWs::open(port());
  EXPECT_EQ(op_of(ws->hello(ServerProcess::token("u1"))), "welcome");
}

TEST_F(WsHandshake, WrongPathIsAnswered404) {
  EXPECT_EQ(ask(RawWs::upgrade_request("/v1/websocket")).status, 404);
  EXPECT_EQ(ask(RawWs::upgrade_request("/")).status, 404);
}

TEST_F(WsHandshake, QueryStringOnThePathIsAccepted) {
  EXPECT_EQ(ask(RawWs::upgrade_request("/v1/ws?client=test")).status, 101);
}

// 4.2.1: a handshake that does not match the description gets an HTTP error
// "such as 400 Bad Request".
TEST_F(WsHandshake, MissingKeyIsAnswered400) {
  EXPECT_EQ(ask(RawWs::upgrade_request("/v1/ws", "", /*key=*/"")).status, 400);
}

// 4.2.1 item 5: the key is base64 of exactly 16 bytes.
TEST_F(WsHandshake, KeyThatIsNotSixteenBytesOfBase64IsAnswered400) {
  EXPECT_EQ(ask(RawWs::upgrade_request("/v1/ws", "", "c2hvcnQ=")).status, 400);         // "short"
  EXPECT_EQ(ask(RawWs::upgrade_request("/v1/ws", "", "not base64 at all!!!!!==")).status, 400);
}

TEST_F(WsHandshake, MissingHostIsAnswered400) {
  const auto head = ask(
      "GET /v1/ws HTTP/1.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
      "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n");
  EXPECT_EQ(head.status, 400);
}

// 4.4: an unsupported version gets an error "such as 426" and a
// Sec-WebSocket-Version header naming the versions the server speaks.
TEST_F(WsHandshake, UnsupportedVersionIsRefusedNamingVersion13) {
  const auto head = ask(
      "GET /v1/ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
      "Sec-WebSocket-Version: 8\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n");
  EXPECT_EQ(head.status, 426);
  EXPECT_EQ(head.header("sec-websocket-version"), "13");
}

// 4.2.1: a request without the version is not a handshake at all: 400 (a
// version the server does not speak is 426, above).
TEST_F(WsHandshake, MissingVersionIsRefused400) {
  const auto head = ask(
      "GET /v1/ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
      "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n");
  EXPECT_EQ(head.status, 400);
}

// 4.1: the handshake is an HTTP/1.1 (or later) GET. Another method on the
// WebSocket path is 405 naming GET (RFC 9110 15.5.6).
TEST_F(WsHandshake, PostWithUpgradeHeadersIsNotUpgraded) {
  const auto head = ask(
      "POST /v1/ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
      "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
      "Content-Length: 0\r\n\r\n");
  EXPECT_EQ(head.status, 405);
  EXPECT_EQ(head.header("allow"), "GET");
}

// An HTTP/1.0 request cannot upgrade: a malformed handshake, 400 (4.2.1).
TEST_F(WsHandshake, Http10UpgradeIsNotUpgraded) {
  const auto head = ask(
      "GET /v1/ws HTTP/1.0\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
      "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n");
  EXPECT_EQ(head.status, 400);
}

// A plain GET of the WebSocket path (a browser tab, a health checker) is told
// to upgrade: 426 with Upgrade: websocket (RFC 9110 15.5.22) and the version.
TEST_F(WsHandshake, PlainGetOfTheWebSocketPathIs426) {
  const auto head = ask("GET /v1/ws HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  EXPECT_EQ(head.status, 426);
  EXPECT_EQ(head.header("upgrade"), "websocket");
  EXPECT_EQ(head.header("sec-websocket-version"), "13");
}

// 4.2.2: the server names a subprotocol or extension only if it accepts one;
// Parley speaks no subprotocol and no extension.
TEST_F(WsHandshake, OfferedSubprotocolIsNotSelected) {
  const auto head = ask(RawWs::upgrade_request("/v1/ws", "Sec-WebSocket-Protocol: chat, mqtt\r\n"));
  EXPECT_EQ(head.status, 101);
  EXPECT_FALSE(head.header("sec-websocket-protocol").has_value());
}

TEST_F(WsHandshake, OfferedExtensionIsNotAccepted) {
  const auto head = ask(RawWs::upgrade_request(
      "/v1/ws", "Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n"));
  EXPECT_EQ(head.status, 101);
  EXPECT_FALSE(head.header("sec-websocket-extensions").has_value());
}

// --- Origin (10.2; docs/protocol-notes.md "Origin") -----------------------------

// Every tenant lists its origins: the handshake itself checks them.
class WsOriginAllListed : public SharedServerTest<WsOriginAllListed> {
 public:
  static ServerSpec server_spec() {
    return websocket_spec(default_tenants_toml("allowed_origins = [\"https://demo.example\"]\n") +
                          "allowed_origins = [\"https://other.example\"]\n");  // `other`'s
  }

 protected:
  HttpHead ask(const std::string& origin) {
    auto ws = RawWs::connect(server_->http_port());
    return ws->http(RawWs::upgrade_request("/v1/ws", "Origin: " + origin + "\r\n"))
        .value_or(HttpHead{});
  }
};

TEST_F(WsOriginAllListed, OriginNoTenantAllowsIsAnswered403) {
  EXPECT_EQ(ask("https://evil.example").status, 403);
}

TEST_F(WsOriginAllListed, OriginOfAnyTenantIsUpgraded) {
  EXPECT_EQ(ask("https://demo.example").status, 101);
  EXPECT_EQ(ask("https://other.example").status, 101);
}

TEST_F(WsOriginAllListed, OriginOfAnotherTenantFailsAtHelloWith4001) {
  auto ws = RawWs::open(server_->http_port(), "Origin: https://other.example\r\n");
  const auto err = ws->hello(ServerProcess::token("u1", "demo"));
  EXPECT_EQ(op_of(err), "error") << err;
  EXPECT_EQ(json_str(err, "code"), "unauthorized");
  EXPECT_TRUE(ws->expect_close(4001));
}

TEST_F(WsOriginAllListed, OriginOfTheTenantIsWelcomedAtHello) {
  auto ws = RawWs::open(server_->http_port(), "Origin: https://demo.example\r\n");
  EXPECT_EQ(op_of(ws->hello(ServerProcess::token("u1", "demo"))), "welcome");
}

}  // namespace
}  // namespace parley::testing
