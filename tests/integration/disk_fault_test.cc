// A failing disk (docs/operations.md "Disk full"): on a real small file system (a
// tmpfs and a loop-mounted ext4), a full disk makes appends answer `unavailable`
// (retryable, no server path in the text) while the process, its connections and
// its reads go on; /healthz and /metrics say why; the server resumes writing by
// itself once there is space; and a start on a full disk serves reads and refuses
// writes instead of aborting. Needs root (mount); skips without it.
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "support/client.h"
#include "support/server_process.h"
#include "support/small_disk.h"

namespace parley::testing {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr uint64_t kMiB = 1 << 20;
constexpr uint64_t kDiskMb = 40;

ServerSpec spec() {
  return spec_with_tenants(default_tenants_toml("publish_per_sec = 0\npublish_per_conn_sec = 0\n"));
}

std::string body_of(size_t i) {
  return R"({"n":)" + std::to_string(i) + R"(,"pad":")" + std::string(2000, 'p') + "\"}";
}

struct Published {
  std::vector<int64_t> acked;  // seqs, in order
  std::string refusal;         // the first error frame; empty if none came
};

// Publishes one message at a time (ids p<from>, p<from+1>, ...) until one is refused
// or `max` were acknowledged.
Published publish_until_refused(Client& c, const std::string& ch, size_t from, size_t max) {
  Published out;
  for (size_t i = from; i < from + max; ++i) {
    c.send(pub_frame(ch, "p" + std::to_string(i), body_of(i), static_cast<int64_t>(i)));
    for (;;) {
      auto o = c.next(10s);
      if (!o) return out;  // closed or silent: the caller's assertions say so
      const std::string op = op_of(*o);
      if (op == "ack") {
        out.acked.push_back(json_int(*o, "seq").value_or(-1));
        break;
      }
      if (op == "error") {
        out.refusal = *o;
        return out;
      }
    }
  }
  return out;
}

// Retries one publish (same id) until it is acknowledged; its seq, or -1 after `within`.
int64_t publish_when_writable(Client& c, const std::string& ch, const std::string& id,
                              std::chrono::seconds within) {
  const auto deadline = Clock::now() + within;
  while (Clock::now() < deadline) {
    c.send(pub_frame(ch, id, body_of(0)));
    for (;;) {
      auto o = c.next(5s);
      if (!o) return -1;
      const std::string op = op_of(*o);
      if (op == "ack") return json_int(*o, "seq").value_or(-1);
      if (op == "error") break;
    }
    std::this_thread::sleep_for(250ms);
  }
  return -1;
}

void expect_refusal_frame(const std::string& frame) {
  EXPECT_EQ(json_str(frame, "code"), "unavailable") << frame;
  EXPECT_GT(json_int(frame, "retry_ms").value_or(0), 0) << frame;
  const std::string msg = json_str(frame, "msg").value_or("");
  EXPECT_NE(msg.find("disk full"), std::string::npos) << frame;
  // Nothing of the server's file system or storage library reaches a client.
  for (const char* leak : {"/", ".log", "MANIFEST", "IO error", "rocksdb", "store/"}) {
    EXPECT_EQ(msg.find(leak), std::string::npos) << leak << " in " << frame;
  }
}

void expect_health(uint16_t port, int status, const std::string& reason = "") {
  auto h = http_request(port, "GET", "/healthz");
  EXPECT_EQ(h.status, status) << h.body;
  if (!reason.empty()) {
    EXPECT_EQ(json_str(h.body, "status"), "store_refusing_writes") << h.body;
    EXPECT_EQ(json_str(h.body, "reason"), reason) << h.body;
    EXPECT_GT(json_int(h.body, "since_ms").value_or(0), 0) << h.body;
  }
}

std::string metrics(uint16_t port) { return http_request(port, "GET", "/metrics").body; }

class DiskFaultTest : public ::testing::TestWithParam<SmallDisk::Kind> {};

TEST_P(DiskFaultTest, FullDiskRefusesAppendsKeepsReadsAndResumesWhenSpaceReturns) {
  ServerProcess server(spec());
  SmallDisk disk(GetParam(), server.dir() + "/data", kDiskMb);
  if (!disk.mounted()) GTEST_SKIP() << disk.why();
  disk.fill_leaving(6 * kMiB);
  server.start();

  auto c = connect_as(server.http_port(), "alice");
  ASSERT_EQ(op_of(c->join("chat:full")), "joined");
  Published p = publish_until_refused(*c, "chat:full", 1, 20000);
  ASSERT_FALSE(p.refusal.empty()) << "no refusal after " << p.acked.size() << " acks; closed: "
                                  << c->closed() << "\n" << server.log();
  ASSERT_GT(p.acked.size(), 100u);
  EXPECT_EQ(p.acked, seq_range(1, static_cast<int64_t>(p.acked.size())));
  expect_refusal_frame(p.refusal);

  // Still refused, same connection, same answer; the process is alive.
  Published again = publish_until_refused(*c, "chat:full", 100000, 3);
  EXPECT_TRUE(again.acked.empty());
  expect_refusal_frame(again.refusal);
  EXPECT_FALSE(c->closed());
  EXPECT_EQ(server.wait_exit(100ms), -1) << server.log();

  // Reads and new connections work: every acknowledged message is there.
  const auto history = http_history_all(server.http_port(), "chat:full");
  ASSERT_EQ(history.size(), p.acked.size());
  for (size_t i = 0; i < history.size(); ++i) {
    ASSERT_EQ(json_str(history[i], "id"), "p" + std::to_string(i + 1));
  }
  auto bob = connect_as(server.http_port(), "bob");
  const std::string joined = bob->join("chat:full");
  EXPECT_EQ(json_int(joined, "seq"), p.acked.back()) << joined;

  expect_health(server.http_port(), 503, "disk_full");
  const std::string m = metrics(server.http_port());
  EXPECT_NE(m.find("parley_store_write_refused{reason=\"disk_full\"} 1"), std::string::npos) << m;
  EXPECT_EQ(m.find("parley_store_refusing_since_seconds 0\n"), std::string::npos) << m;

  // Space comes back: the server notices by itself and the channel continues
  // exactly where the acknowledged messages stopped.
  disk.free_ballast();
  const int64_t seq = publish_when_writable(*c, "chat:full", "after", 30s);
  EXPECT_EQ(seq, p.acked.back() + 1) << server.log();
  expect_health(server.http_port(), 200);
  EXPECT_NE(metrics(server.http_port()).find("parley_store_refusing_since_seconds 0\n"),
            std::string::npos);

  server.terminate();
  EXPECT_EQ(server.wait_exit(15s), 0) << server.log();
}

TEST_P(DiskFaultTest, StartOnAFullDiskServesReadsRefusesWritesAndResumes) {
  ServerProcess server(spec());
  SmallDisk disk(GetParam(), server.dir() + "/data", kDiskMb);
  if (!disk.mounted()) GTEST_SKIP() << disk.why();
  server.start();
  {
    auto c = connect_as(server.http_port(), "alice");
    ASSERT_EQ(op_of(c->join("chat:full")), "joined");
    Published p = publish_until_refused(*c, "chat:full", 1, 50);
    ASSERT_EQ(p.acked, seq_range(1, 50)) << p.refusal;
  }
  server.terminate();
  ASSERT_EQ(server.wait_exit(15s), 0) << server.log();

  disk.fill_leaving(0);
  server.start();  // asserts the ready line: no abort on the full disk
  EXPECT_EQ(http_history_all(server.http_port(), "chat:full").size(), 50u);
  expect_health(server.http_port(), 503, "disk_full");
  auto c = connect_as(server.http_port(), "alice");
  const std::string joined = c->join("chat:full");
  EXPECT_EQ(json_int(joined, "seq"), 50) << joined;
  Published refused = publish_until_refused(*c, "chat:full", 51, 1);
  EXPECT_TRUE(refused.acked.empty());
  expect_refusal_frame(refused.refusal);

  disk.free_ballast();
  EXPECT_EQ(publish_when_writable(*c, "chat:full", "after", 30s), 51) << server.log();
  expect_health(server.http_port(), 200);
  EXPECT_EQ(http_history_all(server.http_port(), "chat:full").size(), 51u);
  server.terminate();
  EXPECT_EQ(server.wait_exit(15s), 0) << server.log();
}

INSTANTIATE_TEST_SUITE_P(Disks, DiskFaultTest,
                         ::testing::Values(SmallDisk::Kind::kTmpfs, SmallDisk::Kind::kExt4),
                         [](const auto& info) { return SmallDisk::name(info.param); });

}  // namespace
}  // namespace parley::testing
