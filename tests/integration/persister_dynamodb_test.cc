// The WAL persister's DynamoDB sink ([dynamodb], issue 28) with real servers:
// the real binary on store = "valkey" against a real redis-server, real `parley
// persist` processes, dynalite (a DynamoDB-compatible server, node) started by
// the test (tests/support/dynamodb_servers.h), and what landed read back with
// the reference client @aws-sdk/client-dynamodb, not with the code under test.
// Every acknowledged message must end as exactly one item (one per seq 1..N of
// each channel, nothing else) whatever fails: a persister killed mid-batch,
// dynalite restarted, a proxy throttling and half-processing batches. History
// older than Valkey keeps is read back from the table.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "integration/persister_load.h"
#include "support/client.h"
#include "support/dynamodb_servers.h"
#include "support/persister_process.h"
#include "support/redis_server.h"
#include "support/server_process.h"

namespace parley::testing {
namespace {

using namespace std::chrono_literals;
using namespace persist_test;

std::string dynamodb_section(const std::string& endpoint, const std::string& table, int spread = 1) {
  return "[dynamodb]\ntable = \"" + table + "\"\nregion = \"us-east-1\"\nendpoint = \"" + endpoint +
         "\"\naccess_key_id = \"AKIDPARLEYTEST\"\nsecret_access_key = \"parley-test-secret\"\n"
         "timeout_ms = 2000\nspread = " + std::to_string(spread) + "\n";
}

ServerSpec server_spec(const std::string& redis, const std::string& endpoint, const std::string& table,
                       int spread = 1) {
  ServerSpec spec = spec_with_tenants(tenants());
  spec.store = "valkey";
  spec.tenants_toml += "\n" + valkey_section({redis}) + "\n" + dynamodb_section(endpoint, table, spread);
  return spec;
}

PersisterSpec persister_spec(const std::string& redis, const std::string& endpoint, const std::string& table,
                             const std::string& consumer, int spread = 1) {
  PersisterSpec p{tenants(), valkey_section({redis}), "",
                  "consumer = \"" + consumer + "\"\nclaim_idle_ms = 1000\ntrim_interval_ms = 100\npoll_ms = 10\n"};
  p.sections_toml = dynamodb_section(endpoint, table, spread);
  return p;
}

// Items per channel ("demo#chat:a" -> seqs, every item counted).
std::map<std::string, std::multiset<int64_t>> by_channel(const std::vector<TableItem>& items, int spread = 1) {
  std::map<std::string, std::multiset<int64_t>> out;
  for (const auto& it : items) {
    std::string ch = it.channel;
    if (spread > 1) ch = ch.substr(0, ch.rfind('#'));  // "<tenant>#<channel>#<seq % spread>"
    out[ch].insert(it.seq);
  }
  return out;
}

// Every acknowledged seq is exactly one item of its channel, and there is no other.
void expect_exactly_once(const std::string& endpoint, const std::string& table,
                         const std::map<std::string, std::set<int64_t>>& acked, int spread = 1) {
  std::vector<TableItem> items;
  ASSERT_TRUE(wait_for(
      [&] {
        items = table_items(endpoint, table);
        return items.size() >= total(acked);
      },
      60s))
      << items.size() << " items, " << total(acked) << " acknowledged";
  std::this_thread::sleep_for(300ms);  // nothing more comes
  items = table_items(endpoint, table);
  EXPECT_EQ(items.size(), total(acked));
  const auto got = by_channel(items, spread);
  EXPECT_EQ(got.size(), acked.size());
  for (const auto& [ch, seqs] : acked) {
    auto it = got.find("demo#" + ch);
    ASSERT_NE(it, got.end()) << ch;
    EXPECT_EQ(std::set<int64_t>(it->second.begin(), it->second.end()), seqs) << ch;
    EXPECT_EQ(it->second.size(), seqs.size()) << ch << ": an item twice";
    // Acks gave 1..N, no hole: so the items are exactly 1..N.
    EXPECT_EQ(static_cast<int64_t>(seqs.size()), *seqs.rbegin() - *seqs.begin() + 1) << ch;
  }
}

class DynamoPersisterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!dynamodb_tools_installed()) GTEST_SKIP() << "no node or tests/dynamodb/node_modules (scripts/setup_node.sh)";
    dynalite().resume();  // a test that failed while it was paused
    ASSERT_TRUE(dynalite().ok() || dynalite().start()) << "dynalite did not start";
    ASSERT_TRUE(redis().ok()) << redis().why();
    ASSERT_EQ(redis().command({"FLUSHALL"}), "OK");
    // A table of its own per test (dynalite is shared by the binary).
    table_ = std::string("t_") + ::testing::UnitTest::GetInstance()->current_test_info()->name();
  }
  static DynaliteServer& dynalite() { return shared_dynalite(); }
  static RedisServer& redis() { return shared_redis(); }
  std::string table_;
};

const std::vector<std::string> kChans = {"chat:a", "chat:b", "chat:c", "chat:d"};

TEST_F(DynamoPersisterTest, EveryAcknowledgedMessageIsOneItemInATableCreatedOnDemand) {
  bool read = false;
  EXPECT_TRUE(table_items(dynalite().endpoint(), table_, &read).empty());
  ASSERT_TRUE(read);
  ServerProcess server(server_spec(redis().address(), dynalite().endpoint(), table_));
  server.start();
  PersisterProcess persister(persister_spec(redis().address(), dynalite().endpoint(), table_, "a"));
  persister.start();
  const auto acked = publish(server.http_port(), kChans, 400, "m");
  ASSERT_EQ(total(acked), 400u) << server.log();
  expect_exactly_once(dynalite().endpoint(), table_, acked);
  // The item is the message: body byte for byte, sender, message id.
  bool found = false;
  for (const auto& it : table_items(dynalite().endpoint(), table_)) {
    if (it.channel != "demo#chat:a" || it.seq != 1) continue;
    found = true;
    EXPECT_EQ(it.body, "{\"id\":\"m-0\"}");
    EXPECT_EQ(it.sender, "alice");
    EXPECT_EQ(it.msg_id, "m-0");
  }
  EXPECT_TRUE(found);
  // Acknowledged only once written, then trimmed behind the group.
  EXPECT_TRUE(wait_for([&] { return persister.metric("parley_persist_acked_total") == 400; }, 10s));
  EXPECT_TRUE(wait_for([&] { return wal_entries(redis()) <= 2 * kPartitions; }, 10s)) << wal_entries(redis());
  EXPECT_TRUE(wait_for([&] { return persister.metric("parley_persist_lag_entries") == 0; }, 10s));
  EXPECT_EQ(persister.metric("parley_persist_dynamodb_items_written_total"), 400);
  EXPECT_GE(persister.metric("parley_persist_dynamodb_requests_total"), 400 / 25);
  EXPECT_EQ(persister.metric("parley_persist_dynamodb_throttles_total"), 0);
  EXPECT_EQ(persister.metric("parley_persist_dynamodb_up"), 1);
  EXPECT_EQ(persister.metric("parley_persist_rows_written_total"), 0);  // no PostgreSQL
  EXPECT_EQ(http_request(persister.http_port(), "GET", "/healthz").status, 200);
  persister.terminate();
  EXPECT_EQ(persister.wait_exit(10s), 0);
}

TEST_F(DynamoPersisterTest, APersisterKilledMidBatchHasItsEntriesReclaimedAndWrittenOnce) {
  ServerProcess server(server_spec(redis().address(), dynalite().endpoint(), table_));
  server.start();
  auto a = std::make_unique<PersisterProcess>(persister_spec(redis().address(), dynalite().endpoint(), table_, "a"));
  a->start();
  const auto first = publish(server.http_port(), kChans, 40, "warm");
  expect_exactly_once(dynalite().endpoint(), table_, first);
  // dynalite hangs: a's next batch is read (pending for a) and its BatchWriteItem waits.
  dynalite().pause();
  auto acked = publish(server.http_port(), kChans, 200, "mid");
  for (auto& [ch, s] : first) acked[ch].insert(s.begin(), s.end());
  // A quiet stream is read about once a second: wait until a has read (its
  // write then hangs), and a moment more so that what it read is all pending.
  auto pending_of_a = [&] {
    int64_t n = 0;  // one line per pending entry: id, consumer, idle, count
    for (int k = 0; k < kPartitions; ++k) {
      const std::string v = redis().command({"XPENDING", "{demo.p" + std::to_string(k) + "}:w",
                                             "parley-persister", "-", "+", "1000", "a"});
      std::istringstream in(v);
      std::string l;
      while (std::getline(in, l)) n += l.find('-') != std::string::npos && l.size() > 3 ? 1 : 0;
    }
    return n;
  };
  wait_for([&] { return pending_of_a() > 0; }, 5s);
  std::this_thread::sleep_for(300ms);
  const int64_t left = pending_of_a();
  if (left == 0) dynalite().resume();
  ASSERT_GT(left, 0) << a->log();
  a->kill9();
  dynalite().resume();
  // b takes over what a left pending once it has idled claim_idle_ms (1 s).
  PersisterProcess b(persister_spec(redis().address(), dynalite().endpoint(), table_, "b"));
  b.start();
  expect_exactly_once(dynalite().endpoint(), table_, acked);
  // At least a's: XAUTOCLAIM may also hand b its own entries again when
  // writing them took longer than claim_idle_ms (dynalite waking up). The
  // table can be whole before b claims (a's hung request may still be
  // written when dynalite wakes), so wait for the claim itself.
  EXPECT_TRUE(wait_for([&] { return b.metric("parley_persist_reclaimed_total") >= left; }, 10s))
      << b.metric("parley_persist_reclaimed_total") << " reclaimed, " << left << " left by a";
  EXPECT_TRUE(wait_for([&] { return b.metric("parley_persist_lag_entries") == 0; }, 10s));
}

TEST_F(DynamoPersisterTest, DynaliteRestartedMidRunLosesAndDoublesNothing) {
  ServerProcess server(server_spec(redis().address(), dynalite().endpoint(), table_));
  server.start();
  PersisterProcess persister(persister_spec(redis().address(), dynalite().endpoint(), table_, "a"));
  persister.start();
  std::map<std::string, std::set<int64_t>> acked;
  std::thread pubs([&] { acked = publish(server.http_port(), kChans, 1500, "r"); });
  ASSERT_TRUE(wait_for([&] { return table_items(dynalite().endpoint(), table_).size() > 150; }, 30s));
  ASSERT_TRUE(dynalite().restart());  // SIGKILL, then again on the same files
  pubs.join();
  ASSERT_EQ(total(acked), 1500u);
  // More after the restart: the persister's connection died with the server.
  for (auto& [ch, s] : publish(server.http_port(), kChans, 100, "after")) acked[ch].insert(s.begin(), s.end());
  expect_exactly_once(dynalite().endpoint(), table_, acked);
  EXPECT_GT(persister.metric("parley_persist_dynamodb_errors_total"), 0);
  EXPECT_TRUE(wait_for([&] { return persister.metric("parley_persist_lag_entries") == 0; }, 10s));
}

TEST_F(DynamoPersisterTest, ThrottledAndHalfProcessedBatchesAreRetriedUntilEveryItemIsIn) {
  // 40% of BatchWriteItem calls refused for capacity, 30% answered with half
  // their puts unprocessed.
  const std::string log = "/tmp/parley-throttle-proxy-" + std::to_string(::getpid()) + ".log";
  ThrottleProxy proxy(dynalite().port(), 0.4, 0.3, log);
  ASSERT_TRUE(proxy.ok());
  ServerProcess server(server_spec(redis().address(), dynalite().endpoint(), table_));
  server.start();
  PersisterProcess persister(persister_spec(redis().address(), proxy.endpoint(), table_, "a"));
  persister.start();
  const auto acked = publish(server.http_port(), kChans, 600, "t");
  ASSERT_EQ(total(acked), 600u);
  expect_exactly_once(dynalite().endpoint(), table_, acked);
  EXPECT_TRUE(wait_for([&] { return persister.metric("parley_persist_acked_total") == 600; }, 30s));
  EXPECT_GT(proxy.throttled(), 0);
  EXPECT_GT(proxy.partial(), 0);
  EXPECT_EQ(persister.metric("parley_persist_dynamodb_throttles_total"), proxy.throttled());
  EXPECT_GT(persister.metric("parley_persist_dynamodb_unprocessed_total"), 0);
  EXPECT_GT(persister.metric("parley_persist_dynamodb_retries_total"), 0);
  // Every put that landed was counted once: 600 plus the ones the proxy cut
  // and then sent again are not double-counted.
  EXPECT_EQ(persister.metric("parley_persist_dynamodb_items_written_total"), 600);
  std::remove(log.c_str());
}

TEST_F(DynamoPersisterTest, HistoryOlderThanValkeyKeepsComesFromDynamoDB) {
  ServerProcess server(server_spec(redis().address(), dynalite().endpoint(), table_));
  server.start();
  PersisterProcess persister(persister_spec(redis().address(), dynalite().endpoint(), table_, "a"));
  persister.start();
  // chat: keeps 20 (+ 64 slack) in Valkey; 300 messages leave most only in DynamoDB.
  const auto acked = publish(server.http_port(), {"chat:long"}, 300, "h");
  expect_exactly_once(dynalite().endpoint(), table_, acked);
  ASSERT_TRUE(wait_for([&] { return wal_entries(redis()) <= 2 * kPartitions; }, 10s)) << wal_entries(redis());
  // Every seq from 1, in order, paging forward (read_after).
  const auto all = http_history_all(server.http_port(), "chat:long");
  ASSERT_EQ(all.size(), 300u);
  for (int i = 0; i < 300; ++i) ASSERT_EQ(json_int(all[i], "seq"), i + 1) << all[i];
  EXPECT_EQ(json_raw(all[4], "body"), "{\"id\":\"h-4\"}");
  EXPECT_EQ(json_str(all[4], "from"), "alice");
  // Backwards (read_before) across the line between DynamoDB and Valkey.
  auto r = http_request(server.http_port(), "GET", "/v1/history?ch=chat:long&before=260&limit=100", "",
                        kDemoApiKey);
  ASSERT_EQ(r.status, 200) << r.body;
  auto items = json_array_items(json_raw(r.body, "msgs").value_or(""));
  ASSERT_EQ(items.size(), 100u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(json_int(items[i], "seq"), 160 + i);
  r = http_request(server.http_port(), "GET", "/v1/history?ch=chat:long&before=11&limit=5", "", kDemoApiKey);
  items = json_array_items(json_raw(r.body, "msgs").value_or(""));
  ASSERT_EQ(items.size(), 5u);
  EXPECT_EQ(json_int(items[0], "seq"), 6);
  EXPECT_EQ(json_int(items[4], "seq"), 10);
  r = http_request(server.http_port(), "GET", "/v1/history?ch=chat:none&before=100", "", kDemoApiKey);
  EXPECT_EQ(json_array_items(json_raw(r.body, "msgs").value_or("")).size(), 0u);
  // DynamoDB down: a page that needs it answers `unavailable`; recent pages,
  // all in Valkey, are served as before.
  dynalite().kill9();
  r = http_request(server.http_port(), "GET", "/v1/history?ch=chat:long&after=0&limit=10", "", kDemoApiKey);
  EXPECT_EQ(r.status, 503) << r.body;
  EXPECT_EQ(json_str(r.body, "code"), "unavailable") << r.body;
  r = http_request(server.http_port(), "GET", "/v1/history?ch=chat:long&after=290", "", kDemoApiKey);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json_array_items(json_raw(r.body, "msgs").value_or("")).size(), 10u);
  ASSERT_TRUE(dynalite().start());
  r = http_request(server.http_port(), "GET", "/v1/history?ch=chat:long&after=0&limit=10", "", kDemoApiKey);
  EXPECT_EQ(r.status, 200) << r.body;
}

TEST_F(DynamoPersisterTest, ASpreadChannelIsWrittenOverItsKeysAndReadBackInOrder) {
  ServerProcess server(server_spec(redis().address(), dynalite().endpoint(), table_, 3));
  server.start();
  PersisterProcess persister(persister_spec(redis().address(), dynalite().endpoint(), table_, "a", 3));
  persister.start();
  const auto acked = publish(server.http_port(), {"chat:hot"}, 200, "s");
  expect_exactly_once(dynalite().endpoint(), table_, acked, 3);
  std::map<std::string, int> keys;
  for (const auto& it : table_items(dynalite().endpoint(), table_)) {
    ++keys[it.channel];
    EXPECT_EQ(it.channel, "demo#chat:hot#" + std::to_string(it.seq % 3));
  }
  EXPECT_EQ(keys.size(), 3u);
  ASSERT_TRUE(wait_for([&] { return wal_entries(redis()) <= 2 * kPartitions; }, 10s));
  const auto all = http_history_all(server.http_port(), "chat:hot");
  ASSERT_EQ(all.size(), 200u);
  for (int i = 0; i < 200; ++i) ASSERT_EQ(json_int(all[i], "seq"), i + 1) << all[i];
  auto r = http_request(server.http_port(), "GET", "/v1/history?ch=chat:hot&before=50&limit=7", "", kDemoApiKey);
  auto items = json_array_items(json_raw(r.body, "msgs").value_or(""));
  ASSERT_EQ(items.size(), 7u);
  for (int i = 0; i < 7; ++i) EXPECT_EQ(json_int(items[i], "seq"), 43 + i);
}

// A self-signed certificate for `name` (subjectAltName IP or DNS) in dir: key.pem, crt.pem.
bool make_cert(const std::string& dir, const std::string& san) {
  const std::string cmd = "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=parley-test -keyout '" +
                          dir + "/key.pem' -out '" + dir + "/crt.pem' -addext 'subjectAltName=" + san +
                          "' >/dev/null 2>&1";
  return std::system(cmd.c_str()) == 0;
}

// https:// endpoints: the certificate chain and the host name are verified;
// an endpoint that fails either is never written to (nothing acknowledged),
// one that passes (ca_file naming its issuer) is.
TEST_F(DynamoPersisterTest, TlsEndpointsAreVerifiedChainAndName) {
  const std::string dir = make_temp_dir("parley-dynamo-tls-");
  ASSERT_TRUE(make_cert(dir, "IP:127.0.0.1"));
  ASSERT_TRUE(std::filesystem::create_directory(dir + "/wrong"));
  ASSERT_TRUE(make_cert(dir + "/wrong", "DNS:dynamodb.elsewhere.example"));
  ThrottleProxy good(dynalite().port(), 0, 0, dir + "/good.log", dir + "/key.pem", dir + "/crt.pem");
  ThrottleProxy misnamed(dynalite().port(), 0, 0, dir + "/misnamed.log", dir + "/wrong/key.pem",
                         dir + "/wrong/crt.pem");
  ASSERT_TRUE(good.ok() && misnamed.ok());
  ServerProcess server(server_spec(redis().address(), dynalite().endpoint(), table_));
  server.start();
  const auto acked = publish(server.http_port(), {"chat:tls"}, 30, "s");
  // Untrusted issuer (the system's trust store), then the right issuer with the wrong name.
  for (const auto& [endpoint, ca] : std::vector<std::pair<std::string, std::string>>{
           {good.endpoint(), ""}, {misnamed.endpoint(), dir + "/wrong/crt.pem"}}) {
    PersisterSpec spec = persister_spec(redis().address(), endpoint, table_, "refused");
    if (!ca.empty()) spec.sections_toml += "ca_file = \"" + ca + "\"\n";
    PersisterProcess refused(spec);
    refused.start();
    EXPECT_TRUE(wait_for([&] { return refused.metric("parley_persist_dynamodb_errors_total") >= 2; }, 10s))
        << refused.log();
    EXPECT_EQ(refused.metric("parley_persist_dynamodb_up"), 0);
    EXPECT_EQ(refused.metric("parley_persist_acked_total"), 0);
    EXPECT_EQ(http_request(refused.http_port(), "GET", "/healthz").status, 503);
    EXPECT_NE(refused.log().find("certificate verify failed"), std::string::npos) << refused.log();
    refused.kill9();
  }
  EXPECT_TRUE(table_items(dynalite().endpoint(), table_).empty());
  // The issuer trusted and the name right: written.
  PersisterSpec spec = persister_spec(redis().address(), good.endpoint(), table_, "trusted");
  spec.sections_toml += "ca_file = \"" + dir + "/crt.pem\"\n";
  PersisterProcess trusted(spec);
  trusted.start();
  expect_exactly_once(dynalite().endpoint(), table_, acked);
  EXPECT_EQ(trusted.metric("parley_persist_dynamodb_up"), 1);
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

}  // namespace
}  // namespace parley::testing
