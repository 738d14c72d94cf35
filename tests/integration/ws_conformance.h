// Shared by the ws_*_test.cc files of ws_conformance_test: RFC 6455 conformance
// of the WebSocket endpoint, driven with hand-made frames (support/raw_ws.h).
// The sections follow Autobahn|Testsuite's: framing, ping/pong, reserved bits,
// opcodes, fragmentation, UTF-8, close, limits, plus the opening handshake.
#pragma once

#include <gtest/gtest.h>

#include "support/client.h"
#include "support/raw_ws.h"
#include "support/server_process.h"

namespace parley::testing {

// demo's max_message_bytes is raised to 128 KiB so a 64-bit-length frame can
// carry a valid op (its hard limit is then 512 KiB).
inline constexpr size_t kSharedMaxMessageBytes = 128 * 1024;

// A WebSocket-only server spec with these tenants.
inline ServerSpec websocket_spec(std::string tenants_toml) {
  ServerSpec spec;
  spec.tenants_toml = std::move(tenants_toml);
  spec.tcp = false;
  return spec;
}

// One server for the whole binary (tests that need another config start their
// own). Started on first use; killed at exit.
inline ServerProcess& shared_server() {
  static ServerProcess server(websocket_spec(default_tenants_toml("max_message_bytes = 131072\n")));
  if (!server.running()) server.start();
  return server;
}

// A WebSocket connection that has said hello as `user`.
inline std::unique_ptr<RawWs> open_session(uint16_t port, const std::string& user = "u1") {
  auto ws = RawWs::open(port);
  const auto welcome = ws->hello(ServerProcess::token(user));
  EXPECT_EQ(op_of(welcome), "welcome") << welcome;
  return ws;
}

// The `ping` op padded with spaces after the object to exactly `size` bytes.
inline std::string ping_op_of_size(int rid, size_t size) {
  std::string f = R"({"op":"ping","rid":)" + std::to_string(rid) + "}";
  if (f.size() < size) f.append(size - f.size(), ' ');
  return f;
}

// Asserts that the next text frame is the pong of `rid` (the connection is
// open and its messages are read).
inline ::testing::AssertionResult answers_ping_op(RawWs& ws, int rid) {
  ws.send_text(R"({"op":"ping","rid":)" + std::to_string(rid) + "}");
  const auto reply = ws.next_text();
  if (!reply) return ::testing::AssertionFailure() << "no reply to the ping op (closed or timed out)";
  if (op_of(*reply) != "pong" || json_int(*reply, "rid") != rid) {
    return ::testing::AssertionFailure() << "expected pong rid " << rid << ", got " << *reply;
  }
  return ::testing::AssertionSuccess();
}

}  // namespace parley::testing
