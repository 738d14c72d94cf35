// The WAL persister (`parley persist`) with real servers: the real binary
// serving on store = "valkey" against a real redis-server, real `parley persist`
// processes, a real PostgreSQL (tests/support/pg_server.h). Every acknowledged
// message must end as exactly one row (count and distinct seqs 1..N per channel)
// whatever fails: PostgreSQL down or restarted, a persister killed mid-batch,
// Valkey restarted. Trimming waits for the group, and history older than
// Valkey keeps is read back from PostgreSQL.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "integration/persister_load.h"
#include "support/client.h"
#include "support/persister_process.h"
#include "support/pg_server.h"
#include "support/redis_server.h"
#include "support/server_process.h"

namespace parley::testing {
namespace {

using namespace std::chrono_literals;
using namespace persist_test;

ServerSpec server_spec(const std::vector<std::string>& nodes, const std::string& pg_url, bool cluster = false) {
  ServerSpec spec = spec_with_tenants(tenants());
  spec.store = "valkey";
  spec.tenants_toml += "\n" + valkey_section(nodes, cluster) + "\n[postgres]\nurl = \"" + pg_url + "\"\n";
  return spec;
}

PersisterSpec persister_spec(const std::vector<std::string>& nodes, const std::string& pg_url,
                             const std::string& consumer, bool cluster = false) {
  return PersisterSpec{tenants(), valkey_section(nodes, cluster), pg_url,
                       "consumer = \"" + consumer + "\"\nclaim_idle_ms = 1000\ntrim_interval_ms = 100\n"
                       "poll_ms = 10\n"};
}

int64_t rows(PgServer& pg) {
  const std::string r = pg.query("SELECT count(*) FROM parley_messages");
  return r.empty() || r.rfind("ERROR", 0) == 0 ? -1 : std::stoll(r);
}

// Every acknowledged seq is exactly one row of its channel, and there is no other.
void expect_exactly_once(PgServer& pg, const std::map<std::string, std::set<int64_t>>& acked) {
  ASSERT_TRUE(wait_for([&] { return rows(pg) >= static_cast<int64_t>(total(acked)); }, 30s))
      << rows(pg) << " rows, " << total(acked) << " acknowledged";
  EXPECT_EQ(rows(pg), static_cast<int64_t>(total(acked)));
  for (const auto& [ch, seqs] : acked) {
    ASSERT_FALSE(seqs.empty());
    const std::string got = pg.query(
        "SELECT count(*), count(DISTINCT seq), min(seq), max(seq) FROM parley_messages "
        "WHERE tenant = 'demo' AND channel = '" + ch + "'");
    EXPECT_EQ(got, std::to_string(seqs.size()) + "|" + std::to_string(seqs.size()) + "|" +
                       std::to_string(*seqs.begin()) + "|" + std::to_string(*seqs.rbegin()))
        << ch;
    // Acks gave 1..N, no hole: so the rows are exactly 1..N.
    EXPECT_EQ(static_cast<int64_t>(seqs.size()), *seqs.rbegin() - *seqs.begin() + 1) << ch;
  }
}

class PersisterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(pg().ok()) << pg().why();
    pg().resume();  // a test that failed while it was paused or stopped
    ASSERT_TRUE(pg().start());
    ASSERT_TRUE(redis().ok()) << redis().why();
    ASSERT_EQ(redis().command({"FLUSHALL"}), "OK");
    pg().query("DROP TABLE IF EXISTS parley_messages");
  }
  static PgServer& pg() { return shared_pg(); }
  static RedisServer& redis() { return shared_redis(); }
};

const std::vector<std::string> kChans = {"chat:a", "chat:b", "chat:c", "chat:d"};

TEST_F(PersisterTest, EveryAcknowledgedMessageIsOneRowAndTheWalIsTrimmedBehindTheGroup) {
  ServerProcess server(server_spec({redis().address()}, pg().url()));
  server.start();
  PersisterProcess persister(persister_spec({redis().address()}, pg().url(), "a"));
  persister.start();
  const auto acked = publish(server.http_port(), kChans, 400, "m");
  ASSERT_EQ(total(acked), 400u) << server.log();
  expect_exactly_once(pg(), acked);
  // The body is the published JSON text, byte for byte.
  EXPECT_EQ(pg().query("SELECT body, sender FROM parley_messages WHERE tenant = 'demo' AND "
                       "channel = 'chat:a' AND seq = 1"),
            "{\"id\":\"m-0\"}|alice");
  // Acknowledged entries are trimmed: each stream keeps at most its last delivered entry.
  EXPECT_TRUE(wait_for([&] { return wal_entries(redis()) <= 2 * kPartitions; }, 10s)) << wal_entries(redis());
  EXPECT_TRUE(wait_for([&] { return persister.metric("parley_persist_lag_entries") == 0; }, 10s));
  EXPECT_EQ(persister.metric("parley_persist_rows_written_total"), 400);
  EXPECT_EQ(persister.metric("parley_persist_duplicate_rows_total"), 0);
  EXPECT_EQ(persister.metric("parley_persist_acked_total"), 400);
  EXPECT_GE(persister.metric("parley_persist_batches_total"), 1);
  EXPECT_GE(persister.metric("parley_persist_trimmed_total"), 400 - 2 * kPartitions);
  EXPECT_EQ(persister.metric("parley_persist_streams"), 2 * kPartitions);
  EXPECT_EQ(persister.metric("parley_persist_postgres_up"), 1);
  EXPECT_EQ(http_request(persister.http_port(), "GET", "/healthz").status, 200);
  // A clean stop (SIGTERM) exits 0.
  persister.terminate();
  EXPECT_EQ(persister.wait_exit(10s), 0);
}

TEST_F(PersisterTest, QuietStreamsAreReadAboutOnceASecond) {
  PersisterProcess persister(persister_spec({redis().address()}, pg().url(), "a"));  // poll_ms 10
  persister.start();
  std::this_thread::sleep_for(2500ms);  // every stream's idle wait has grown to 1 s
  ASSERT_EQ(redis().command({"CONFIG", "RESETSTAT"}), "OK");
  std::this_thread::sleep_for(2000ms);
  const std::string stats = redis().command({"INFO", "commandstats"});
  const size_t at = stats.find("cmdstat_xreadgroup:calls=");
  ASSERT_NE(at, std::string::npos) << stats;
  const long calls = std::stol(stats.substr(at + 25));
  // 8 streams (2 tenants x 4 partitions) for 2 s: ~16 reads, where polling every
  // round (10 ms) would have made ~1,600.
  EXPECT_LE(calls, 8 * 2 * 2) << stats;
  EXPECT_GE(calls, 8);
}

TEST_F(PersisterTest, AnotherGroupHoldsTrimmingBackUntilItAcknowledges) {
  ServerProcess server(server_spec({redis().address()}, pg().url()));
  server.start();
  // An outside consumer group on each of demo's streams, created before any entry.
  for (int k = 0; k < kPartitions; ++k) {
    ASSERT_EQ(redis().command({"XGROUP", "CREATE", "{demo.p" + std::to_string(k) + "}:w", "audit", "0",
                               "MKSTREAM"}),
              "OK");
  }
  PersisterProcess persister(persister_spec({redis().address()}, pg().url(), "a"));
  persister.start();
  const auto acked = publish(server.http_port(), kChans, 200, "g");
  expect_exactly_once(pg(), acked);
  std::this_thread::sleep_for(500ms);  // several trim passes
  // Nothing of demo's streams went: the audit group has read nothing.
  int64_t demo = 0;
  for (int k = 0; k < kPartitions; ++k) {
    demo += std::stoll(redis().command({"XLEN", "{demo.p" + std::to_string(k) + "}:w"}));
  }
  EXPECT_EQ(demo, 200);
  // Once the audit group has read and acknowledged everything, the streams go.
  for (int k = 0; k < kPartitions; ++k) {
    const std::string key = "{demo.p" + std::to_string(k) + "}:w";
    redis().command({"XREADGROUP", "GROUP", "audit", "x", "COUNT", "1000", "STREAMS", key, ">"});
    const std::string ids = redis().command({"XPENDING", key, "audit", "-", "+", "1000"});
    std::istringstream in(ids);
    std::string line;
    std::vector<std::string> ack = {"XACK", key, "audit"};
    while (std::getline(in, line)) {
      if (line.find('-') != std::string::npos && line.size() > 2) ack.push_back(line);
    }
    redis().command(ack);
  }
  EXPECT_TRUE(wait_for([&] { return wal_entries(redis()) <= 2 * kPartitions; }, 10s)) << wal_entries(redis());
}

TEST_F(PersisterTest, HistoryOlderThanValkeyKeepsComesFromPostgres) {
  ServerProcess server(server_spec({redis().address()}, pg().url()));
  server.start();
  PersisterProcess persister(persister_spec({redis().address()}, pg().url(), "a"));
  persister.start();
  // chat: keeps 20 (+ 64 slack) in Valkey; 300 messages leave most only in PostgreSQL.
  const auto acked = publish(server.http_port(), {"chat:long"}, 300, "h");
  expect_exactly_once(pg(), acked);
  // Every seq from 1, in order, paging forward (read_after).
  const auto all = http_history_all(server.http_port(), "chat:long");
  ASSERT_EQ(all.size(), 300u);
  for (int i = 0; i < 300; ++i) ASSERT_EQ(json_int(all[i], "seq"), i + 1) << all[i];
  EXPECT_EQ(json_raw(all[4], "body"), "{\"id\":\"h-4\"}");
  // Backwards (read_before) across the line between PostgreSQL and Valkey.
  auto r = http_request(server.http_port(), "GET", "/v1/history?ch=chat:long&before=260&limit=100", "",
                        kDemoApiKey);
  ASSERT_EQ(r.status, 200) << r.body;
  auto items = json_array_items(json_raw(r.body, "msgs").value_or(""));
  ASSERT_EQ(items.size(), 100u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(json_int(items[i], "seq"), 160 + i);
  // All below what Valkey holds.
  r = http_request(server.http_port(), "GET", "/v1/history?ch=chat:long&before=11&limit=5", "", kDemoApiKey);
  items = json_array_items(json_raw(r.body, "msgs").value_or(""));
  ASSERT_EQ(items.size(), 5u);
  EXPECT_EQ(json_int(items[0], "seq"), 6);
  EXPECT_EQ(json_int(items[4], "seq"), 10);
  // A channel never written: empty, whichever way.
  r = http_request(server.http_port(), "GET", "/v1/history?ch=chat:none&before=100", "", kDemoApiKey);
  EXPECT_EQ(json_array_items(json_raw(r.body, "msgs").value_or("")).size(), 0u);
  // PostgreSQL down: a page that needs it answers `unavailable`; recent pages,
  // all in Valkey, are served as before.
  pg().stop();
  r = http_request(server.http_port(), "GET", "/v1/history?ch=chat:long&after=0&limit=10", "", kDemoApiKey);
  EXPECT_EQ(r.status, 503) << r.body;
  EXPECT_EQ(json_str(r.body, "code"), "unavailable") << r.body;
  r = http_request(server.http_port(), "GET", "/v1/history?ch=chat:long&after=290", "", kDemoApiKey);
  ASSERT_EQ(r.status, 200) << r.body;
  items = json_array_items(json_raw(r.body, "msgs").value_or(""));
  ASSERT_EQ(items.size(), 10u);
  EXPECT_EQ(json_int(items[0], "seq"), 291);
  ASSERT_TRUE(pg().start());
  r = http_request(server.http_port(), "GET", "/v1/history?ch=chat:long&after=0&limit=10", "", kDemoApiKey);
  EXPECT_EQ(r.status, 200) << r.body;
}

TEST_F(PersisterTest, PostgresDownThePersisterWaitsAndResumesWithoutLossOrDuplicates) {
  ServerProcess server(server_spec({redis().address()}, pg().url()));
  server.start();
  PersisterProcess persister(persister_spec({redis().address()}, pg().url(), "a"));
  persister.start();
  const auto first = publish(server.http_port(), kChans, 100, "before");
  expect_exactly_once(pg(), first);
  pg().stop();
  auto acked = publish(server.http_port(), kChans, 300, "down");
  for (auto& [ch, s] : first) acked[ch].insert(s.begin(), s.end());
  EXPECT_TRUE(wait_for([&] { return persister.metric("parley_persist_postgres_errors_total") > 0; }, 10s));
  EXPECT_TRUE(wait_for([&] { return persister.metric("parley_persist_lag_entries") >= 300; }, 10s))
      << persister.metric("parley_persist_lag_entries");
  EXPECT_GT(persister.metric("parley_persist_lag_seconds"), 0);
  EXPECT_EQ(persister.metric("parley_persist_postgres_up"), 0);
  EXPECT_EQ(http_request(persister.http_port(), "GET", "/healthz").status, 503);
  // Nothing unpersisted is trimmed meanwhile.
  EXPECT_GE(wal_entries(redis()), 300);
  ASSERT_TRUE(pg().start());
  expect_exactly_once(pg(), acked);
  EXPECT_TRUE(wait_for([&] { return persister.metric("parley_persist_lag_entries") == 0; }, 10s));
  EXPECT_EQ(persister.metric("parley_persist_postgres_up"), 1);
}

TEST_F(PersisterTest, PostgresRestartedMidRunLosesAndDoublesNothing) {
  ServerProcess server(server_spec({redis().address()}, pg().url()));
  server.start();
  PersisterProcess persister(persister_spec({redis().address()}, pg().url(), "a"));
  persister.start();
  std::map<std::string, std::set<int64_t>> acked;
  std::thread pubs([&] { acked = publish(server.http_port(), kChans, 2000, "r"); });
  ASSERT_TRUE(wait_for([&] { return rows(pg()) > 200; }, 30s));
  ASSERT_TRUE(pg().restart());  // immediate stop (no checkpoint), then start
  pubs.join();
  ASSERT_EQ(total(acked), 2000u);
  // More after the restart: the persister's connection died with the server.
  for (auto& [ch, s] : publish(server.http_port(), kChans, 100, "after")) acked[ch].insert(s.begin(), s.end());
  expect_exactly_once(pg(), acked);
  EXPECT_GT(persister.metric("parley_persist_postgres_errors_total"), 0);
}

TEST_F(PersisterTest, APersisterKilledMidBatchHasItsEntriesReclaimedAndWrittenOnce) {
  ServerProcess server(server_spec({redis().address()}, pg().url()));
  server.start();
  auto a = std::make_unique<PersisterProcess>(persister_spec({redis().address()}, pg().url(), "a"));
  a->start();
  const auto first = publish(server.http_port(), kChans, 40, "warm");
  expect_exactly_once(pg(), first);
  // PostgreSQL hangs: a's next batch is read (pending for a) and its INSERT waits.
  pg().pause();
  auto acked = publish(server.http_port(), kChans, 200, "mid");
  for (auto& [ch, s] : first) acked[ch].insert(s.begin(), s.end());
  auto pending_of_a = [&] {
    int64_t n = 0;
    for (int k = 0; k < kPartitions; ++k) {
      const std::string v = redis().command({"XPENDING", "{demo.p" + std::to_string(k) + "}:w",
                                             "parley-persister", "-", "+", "1000", "a"});
      std::istringstream in(v);
      std::string l;
      while (std::getline(in, l)) n += l.find('-') != std::string::npos && l.size() > 3 ? 1 : 0;
    }
    return n;
  };
  // a read what was there at its last round and waits on its INSERT; the rest
  // was never delivered to it.
  std::this_thread::sleep_for(500ms);
  const int64_t left = pending_of_a();
  ASSERT_GT(left, 0) << redis().command({"XPENDING", "{demo.p0}:w", "parley-persister"}) << "\n"
                     << redis().command({"XINFO", "GROUPS", "{demo.p0}:w"}) << "\n" << a->log();
  a->kill9();
  pg().resume();
  // b takes over what a left pending once it has idled claim_idle_ms (1 s).
  PersisterProcess b(persister_spec({redis().address()}, pg().url(), "b"));
  b.start();
  expect_exactly_once(pg(), acked);
  EXPECT_EQ(b.metric("parley_persist_reclaimed_total"), left);
  EXPECT_EQ(b.metric("parley_persist_rows_written_total"), 200);
  EXPECT_TRUE(wait_for([&] { return pending_of_a() == 0; }, 5s));
}

TEST_F(PersisterTest, RowsCommittedButNeverAcknowledgedAreNotWrittenTwice) {
  ServerProcess server(server_spec({redis().address()}, pg().url()));
  server.start();
  // A persister that died between COMMIT and XACK left these rows behind.
  pg().query(
      "CREATE TABLE parley_messages (tenant text NOT NULL, channel text NOT NULL, seq bigint NOT NULL, "
      "ts_ms bigint NOT NULL, sender text NOT NULL, msg_id text NOT NULL, body text NOT NULL, "
      "PRIMARY KEY (tenant, channel, seq))");
  ASSERT_EQ(pg().query("INSERT INTO parley_messages SELECT 'demo', 'chat:a', g, 0, 'alice', 'x', '{\"old\":1}' "
                       "FROM generate_series(1, 10) g"),
            "INSERT 0 10");
  const auto acked = publish(server.http_port(), {"chat:a"}, 30, "c");
  PersisterProcess persister(persister_spec({redis().address()}, pg().url(), "a"));
  persister.start();
  expect_exactly_once(pg(), acked);
  EXPECT_TRUE(wait_for([&] { return persister.metric("parley_persist_acked_total") == 30; }, 10s));
  EXPECT_EQ(persister.metric("parley_persist_duplicate_rows_total"), 10);
  EXPECT_EQ(persister.metric("parley_persist_rows_written_total"), 20);
}

TEST_F(PersisterTest, ValkeyRestartedThePersisterReconnectsAndWritesEachEntryOnce) {
  char tmpl[] = "/tmp/parley-persist-redis-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  // appendfsync always: an acknowledged append survives the kill (the store's
  // guarantee on this setting), so the acked set is the truth to compare with.
  RedisServer own(tmpl, RedisServer::Options{false, "always"});
  ASSERT_TRUE(own.ok()) << own.why();
  ServerProcess server(server_spec({own.address()}, pg().url()));
  server.start();
  PersisterProcess persister(persister_spec({own.address()}, pg().url(), "a"));
  persister.start();
  auto acked = publish(server.http_port(), kChans, 200, "v1");
  expect_exactly_once(pg(), acked);
  std::map<std::string, std::set<int64_t>> more;
  std::thread pubs([&] { more = publish(server.http_port(), kChans, 600, "v2"); });
  std::this_thread::sleep_for(300ms);
  own.kill9();
  std::this_thread::sleep_for(300ms);
  ASSERT_TRUE(own.restart());
  pubs.join();
  for (auto& [ch, s] : more) acked[ch].insert(s.begin(), s.end());
  ASSERT_EQ(total(acked), 800u);
  expect_exactly_once(pg(), acked);
  EXPECT_GT(persister.metric("parley_persist_valkey_errors_total"), 0);
  EXPECT_TRUE(wait_for([&] { return persister.metric("parley_persist_lag_entries") == 0; }, 10s));
  std::filesystem::remove_all(tmpl);
}

TEST_F(PersisterTest, WorksOnTwoIndependentNodesAndOnACluster) {
  char tmpl[] = "/tmp/parley-persist-redis2-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  {
    RedisServer second(tmpl);
    ASSERT_TRUE(second.ok()) << second.why();
    const std::vector<std::string> nodes = {redis().address(), second.address()};
    ServerProcess server(server_spec(nodes, pg().url()));
    server.start();
    PersisterProcess persister(persister_spec(nodes, pg().url(), "a"));
    persister.start();
    std::vector<std::string> chans;
    for (int i = 0; i < 12; ++i) chans.push_back("chat:n" + std::to_string(i));
    const auto acked = publish(server.http_port(), chans, 240, "n");
    expect_exactly_once(pg(), acked);
    // Partitions 1 and 3 live on the second node (k % 2).
    EXPECT_NE(second.command({"XINFO", "GROUPS", "{demo.p1}:w"}).find("parley-persister"), std::string::npos);
    EXPECT_EQ(redis().command({"EXISTS", "{demo.p1}:w"}), "0");
  }
  std::filesystem::remove_all(tmpl);

  RedisCluster& cluster = shared_redis_cluster();
  ASSERT_TRUE(cluster.ok()) << cluster.why();
  cluster.flush_all();
  pg().query("DROP TABLE IF EXISTS parley_messages");
  ServerProcess server(server_spec(cluster.addresses(), pg().url(), true));
  server.start();
  PersisterProcess persister(persister_spec(cluster.addresses(), pg().url(), "a", true));
  persister.start();
  std::vector<std::string> chans;
  for (int i = 0; i < 12; ++i) chans.push_back("chat:c" + std::to_string(i));
  const auto acked = publish(server.http_port(), chans, 240, "c");
  expect_exactly_once(pg(), acked);
  EXPECT_EQ(persister.metric("parley_persist_valkey_errors_total"), 0);
}

}  // namespace
}  // namespace parley::testing
