#include "server/config.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

namespace parley::server {
namespace {

// The smallest valid tenant; most tests add one key to it.
constexpr std::string_view kDemo = R"(
[tenants.demo]
secret = "0123456789abcdef"
api_key = "k1"
)";

std::string with_demo(std::string_view extra) { return std::string(kDemo) + std::string(extra); }

// The error message of a document expected to be refused.
std::string error_of(std::string_view toml) {
  auto r = parse_config(toml);
  if (r.is_ok()) return "<accepted>";
  EXPECT_EQ(r.error().code, ErrorCode::kBadRequest);
  return r.error().msg;
}

TEST(Config, ParsesEveryKey) {
  auto r = parse_config(R"(
[server]
listen = "0.0.0.0:8800"
tcp_listen = "127.0.0.1:8801"
unix_listen = "/run/parley.sock"
store = "memory"
data_dir = "/var/lib/parley"
fsync = "always"
accept_data_loss = true
threads = 4
heartbeat_ms = 15000
hello_timeout_ms = 5000
append_queue_limit = 500
max_connections = 1000
ephemeral_memory_bytes = 1048576
channel_idle_s = 5
log_level = "debug"

[tenants.game-1]
secret = "0123456789abcdef0123"
api_key = "key-1"
max_connections = 10
publish_per_sec = 300
publish_per_conn_sec = 7
max_message_bytes = 1024
max_channels_per_conn = 16
max_queue_bytes = 2048
max_sanctions = 3
allowed_origins = ["https://game.example", "https://www.game.example"]

[tenants.game-1.namespaces.world]
durable = false
history = 50
tick_ms = 0
presence = false
dedupe_window_s = 30
history_ttl_s = 600
upstream = "http://127.0.0.1:9000/events"
forward = ["join", "msg", "state", "delete"]
upstream_queue = 5000

[tenants.game-1.namespaces.default]
history = 10

[valkey]
nodes = ["127.0.0.1:6379"]
cluster = false
partitions = 64

[postgres]
url = "postgresql://parley@127.0.0.1:5432/parley"
)");
  ASSERT_TRUE(r.is_ok()) << r.error().msg;
  const ServerConfig& c = *r;
  EXPECT_EQ(c.listen, "0.0.0.0:8800");
  EXPECT_EQ(c.tcp_listen, "127.0.0.1:8801");
  EXPECT_EQ(c.unix_listen, "/run/parley.sock");
  EXPECT_EQ(c.store, "memory");
  EXPECT_EQ(c.data_dir, "/var/lib/parley");
  EXPECT_EQ(c.fsync, "always");
  EXPECT_TRUE(c.accept_data_loss);
  EXPECT_EQ(c.threads, 4u);
  EXPECT_EQ(c.heartbeat_ms, 15000u);
  EXPECT_EQ(c.hello_timeout_ms, 5000u);
  EXPECT_EQ(c.append_queue_limit, 500u);
  EXPECT_EQ(c.max_connections, 1000u);
  EXPECT_EQ(c.ephemeral_memory_bytes, 1048576u);
  EXPECT_EQ(c.channel_idle_s, 5u);
  EXPECT_EQ(c.log_level, "debug");

  ASSERT_EQ(c.tenants.size(), 1u);
  const TenantConfig& t = c.tenants.at("game-1");
  EXPECT_EQ(t.id, "game-1");
  EXPECT_EQ(t.secret, "0123456789abcdef0123");
  EXPECT_EQ(t.api_key, "key-1");
  EXPECT_EQ(t.max_connections, 10u);
  EXPECT_EQ(t.publish_per_sec, 300u);
  EXPECT_EQ(t.publish_per_conn_sec, 7u);
  EXPECT_EQ(t.max_message_bytes, 1024u);
  EXPECT_EQ(t.max_channels_per_conn, 16u);
  EXPECT_EQ(t.max_queue_bytes, 2048u);
  EXPECT_EQ(t.max_sanctions, 3u);
  EXPECT_EQ(t.allowed_origins,
            (std::vector<std::string>{"https://game.example", "https://www.game.example"}));

  ASSERT_EQ(t.namespaces.size(), 1u);  // "default" is not a listed namespace
  const NamespaceConfig& w = t.ns("world");
  EXPECT_FALSE(w.durable);
  EXPECT_EQ(w.history, 50u);
  EXPECT_EQ(w.tick_ms, 0u);
  EXPECT_FALSE(w.presence);
  EXPECT_EQ(w.dedupe_window_s, 30u);
  EXPECT_EQ(w.history_ttl_s, 600u);
  EXPECT_EQ(w.upstream, "http://127.0.0.1:9000/events");
  EXPECT_EQ(w.forward, kForwardJoin | kForwardMsg | kForwardState | kForwardDelete);
  EXPECT_EQ(w.upstream_queue, 5000u);
  EXPECT_EQ(t.default_namespace.history, 10u);
  EXPECT_EQ(t.ns("chat").history, 10u);
}

TEST(Config, OmittedKeysTakeTheDocumentedDefaults) {
  auto r = parse_config(kDemo);
  ASSERT_TRUE(r.is_ok()) << r.error().msg;
  const ServerConfig& c = *r;
  EXPECT_EQ(c.listen, "127.0.0.1:7700");
  EXPECT_EQ(c.tcp_listen, "");
  EXPECT_EQ(c.unix_listen, "");
  EXPECT_EQ(c.store, "embedded");
  EXPECT_EQ(c.data_dir, "./data");
  EXPECT_EQ(c.fsync, "never");
  EXPECT_FALSE(c.accept_data_loss);
  EXPECT_EQ(c.threads, 0u);
  EXPECT_EQ(c.heartbeat_ms, 25000u);
  EXPECT_EQ(c.loop_slice_us, 0u);
  EXPECT_EQ(c.hello_timeout_ms, 10000u);
  EXPECT_EQ(c.log_level, "info");
  EXPECT_EQ(c.log_format, "text");
  EXPECT_EQ(c.ephemeral_memory_bytes, 256u << 20);
  EXPECT_EQ(c.channel_idle_s, 60u);

  const TenantConfig& t = c.tenants.at("demo");
  EXPECT_EQ(t.max_connections, 50000u);
  EXPECT_EQ(t.publish_per_sec, 20000u);
  EXPECT_EQ(t.publish_per_conn_sec, 100u);
  EXPECT_EQ(t.max_message_bytes, 64u * 1024);
  EXPECT_EQ(t.max_channels_per_conn, 128u);
  EXPECT_EQ(t.max_queue_bytes, 4u << 20);
  EXPECT_EQ(t.max_sanctions, 100000u);
  EXPECT_TRUE(t.allowed_origins.empty());
  EXPECT_TRUE(t.namespaces.empty());
  const NamespaceConfig& ns = t.ns("anything");
  EXPECT_TRUE(ns.durable);
  EXPECT_EQ(ns.history, 1000u);
  EXPECT_EQ(ns.tick_ms, 20u);
  EXPECT_TRUE(ns.presence);
  EXPECT_EQ(ns.dedupe_window_s, 120u);
  EXPECT_EQ(ns.history_ttl_s, 3600u);
  EXPECT_EQ(ns.upstream, "");
  EXPECT_EQ(ns.forward, kForwardJoin | kForwardLeave | kForwardUp);
  EXPECT_EQ(ns.upstream_queue, 100'000u);
}

TEST(Config, ListedNamespaceStartsFromTheDefaults) {
  auto r = parse_config(with_demo("[tenants.demo.namespaces.chat]\nhistory = 5\n"));
  ASSERT_TRUE(r.is_ok()) << r.error().msg;
  const auto& ns = r->tenants.at("demo").ns("chat");
  EXPECT_EQ(ns.history, 5u);
  EXPECT_TRUE(ns.durable);
  EXPECT_EQ(ns.tick_ms, 20u);
}

TEST(Config, ZeroRatesAreAccepted) {
  auto r = parse_config(with_demo("publish_per_sec = 0\npublish_per_conn_sec = 0\n"));
  ASSERT_TRUE(r.is_ok()) << r.error().msg;
  EXPECT_EQ(r->tenants.at("demo").publish_per_sec, 0u);
}

TEST(Config, SeveralTenantsAreKeptApart) {
  auto r = parse_config(with_demo(R"(
[tenants.other]
secret = "fedcba9876543210"
api_key = "k2"
)"));
  ASSERT_TRUE(r.is_ok()) << r.error().msg;
  EXPECT_EQ(r->tenants.size(), 2u);
  EXPECT_EQ(r->tenants.at("other").api_key, "k2");
}

// The docs' own example: "consumer = \"\"   # empty: <hostname>-<pid>" (issue 22).
TEST(Config, AnEmptyPersistConsumerMeansTheDefault) {
  auto r = parse_config(with_demo("[persist]\nconsumer = \"\"\n"));
  ASSERT_TRUE(r.is_ok()) << r.error().msg;
  EXPECT_EQ(r->persist.consumer, "");
}

// Every problem, one per line, not the first (issue 22): section by section,
// keys by name within one (the TOML library's order).
TEST(Config, EveryProblemIsReported) {
  EXPECT_EQ(error_of("[server]\nthreads = -1\nlisen = 1\n"
                     "[tenants.demo]\nsecret = \"short\"\n"
                     "[tenants.demo.topics.t]\npartitions = 0\n"
                     "[valkey]\npartitions = 0\n"
                     "[persist]\nbatch = 0\n"),
            "persist.batch must be an integer between 1 and 10000\n"
            "unknown key server.lisen\n"
            "server.threads must be an integer between 0 and 1024\n"
            "tenants.demo.secret must be at least 16 bytes\n"
            "tenants.demo.topics.t.partitions must be an integer between 1 and 1024\n"
            "tenants.demo.api_key is required\n"
            "valkey.partitions must be an integer between 1 and 16384");
}

TEST(Config, UnknownKeysAreNamedByTheirFullPath) {
  EXPECT_EQ(error_of(with_demo("max_conections = 5\n")),
            "unknown key tenants.demo.max_conections");
  EXPECT_EQ(error_of(with_demo("[server]\nlisten_addr = \"x\"\n")),
            "unknown key server.listen_addr");
  EXPECT_EQ(error_of(with_demo("[tenants.demo.namespaces.world]\ntickms = 5\n")),
            "unknown key tenants.demo.namespaces.world.tickms");
  EXPECT_EQ(error_of(with_demo("[storage]\nx = 1\n")), "unknown key storage");
  EXPECT_EQ(error_of("log_level = \"info\"\n" + with_demo("")), "unknown key log_level");
}

TEST(Config, WrongTypesNameTheKey) {
  EXPECT_EQ(error_of(with_demo("[server]\nthreads = \"4\"\n")),
            "server.threads must be an integer between 0 and 1024");
  EXPECT_EQ(error_of(with_demo("[server]\nthreads = 4.0\n")),
            "server.threads must be an integer between 0 and 1024");
  EXPECT_EQ(error_of(with_demo("[server]\nlisten = 7700\n")), "server.listen must be a string");
  EXPECT_EQ(error_of(with_demo("[tenants.demo.namespaces.world]\ndurable = \"no\"\n")),
            "tenants.demo.namespaces.world.durable must be true or false");
  EXPECT_EQ(error_of(with_demo("allowed_origins = \"https://a\"\n")),
            "tenants.demo.allowed_origins must be an array of strings");
  EXPECT_EQ(error_of(with_demo("allowed_origins = [1]\n")),
            "tenants.demo.allowed_origins must be an array of non-empty strings");
  EXPECT_EQ(error_of("server = 1\n" + with_demo("")), "server must be a table");
  EXPECT_EQ(error_of("tenants = 1\n"), "tenants must be a table");
  EXPECT_EQ(error_of("[tenants]\ndemo = 1\n"), "tenants.demo must be a table");
  EXPECT_EQ(error_of(with_demo("namespaces = 1\n")), "tenants.demo.namespaces must be a table");
  EXPECT_EQ(error_of(with_demo("namespaces.world = 1\n")),
            "tenants.demo.namespaces.world must be a table");
  EXPECT_EQ(error_of("valkey = 1\n" + with_demo("")), "valkey must be a table");
}

TEST(Config, OutOfRangeValuesNameTheKeyAndRange) {
  EXPECT_EQ(error_of(with_demo("[tenants.demo.namespaces.w]\ntick_ms = 10001\n")),
            "tenants.demo.namespaces.w.tick_ms must be an integer between 0 and 10000");
  EXPECT_EQ(error_of(with_demo("[tenants.demo.namespaces.w]\nhistory = 1000001\n")),
            "tenants.demo.namespaces.w.history must be an integer between 0 and 1000000");
  EXPECT_EQ(error_of(with_demo("[tenants.demo.namespaces.w]\ndedupe_window_s = -1\n")),
            "tenants.demo.namespaces.w.dedupe_window_s must be an integer between 0 and 86400");
  EXPECT_EQ(error_of(with_demo("max_message_bytes = 63\n")),
            "tenants.demo.max_message_bytes must be an integer between 64 and 16777216");
  EXPECT_EQ(error_of(with_demo("max_message_bytes = 16777217\n")),
            "tenants.demo.max_message_bytes must be an integer between 64 and 16777216");
  EXPECT_EQ(error_of(with_demo("max_connections = 0\n")),
            "tenants.demo.max_connections must be an integer between 1 and 10000000");
  EXPECT_EQ(error_of(with_demo("publish_per_sec = 4294967296\n")),
            "tenants.demo.publish_per_sec must be an integer between 0 and 1000000000");
  EXPECT_EQ(error_of(with_demo("[server]\nloop_slice_us = 100001\n")),
            "server.loop_slice_us must be an integer between 0 and 100000");
  EXPECT_EQ(error_of(with_demo("[server]\nheartbeat_ms = 10\n")),
            "server.heartbeat_ms must be an integer between 100 and 3600000");
  EXPECT_TRUE(parse_config(with_demo("max_message_bytes = 16777216\nmax_queue_bytes = 16777216\n"
                                     "[tenants.demo.namespaces.w]\ntick_ms = 10000\n"
                                     "history = 1000000\n"))
                  .is_ok());
}

TEST(Config, QueueMustHoldAtLeastOneMessage) {
  EXPECT_EQ(error_of(with_demo("max_message_bytes = 8192\nmax_queue_bytes = 4096\n")),
            "tenants.demo.max_queue_bytes must be at least max_message_bytes (8192)");
}

TEST(Config, EnumeratedStringsListTheirChoices) {
  EXPECT_EQ(error_of(with_demo("[server]\nstore = \"disk\"\n")),
            "server.store must be one of embedded, memory, valkey");
  EXPECT_EQ(error_of(with_demo("[server]\nfsync = \"sometimes\"\n")),
            "server.fsync must be one of never, always");
  EXPECT_EQ(error_of(with_demo("[server]\nlog_level = \"loud\"\n")),
            "server.log_level must be one of trace, debug, info, warn, error, critical, off");
  EXPECT_EQ(error_of(with_demo("[server]\nlog_format = \"xml\"\n")),
            "server.log_format must be one of text, json");
  EXPECT_EQ(error_of(with_demo("[tenants.demo.namespaces.w]\nforward = [\"join\", \"kick\"]\n")),
            "tenants.demo.namespaces.w.forward entries must be join, leave, msg, state, up, edit or delete");
}

TEST(Config, LogFormatJsonIsAccepted) {
  auto r = parse_config(with_demo("[server]\nlog_format = \"json\"\n"));
  ASSERT_TRUE(r) << r.error().msg;
  EXPECT_EQ(r->log_format, "json");
}

TEST(Config, AdminKeyIsOffByDefaultAndChecked) {
  auto off = parse_config(with_demo(""));
  ASSERT_TRUE(off);
  EXPECT_EQ(off->admin_key, "");
  auto on = parse_config(with_demo("[server]\nadmin_key = \"admin-key-0123456789\"\n"));
  ASSERT_TRUE(on) << on.error().msg;
  EXPECT_EQ(on->admin_key, "admin-key-0123456789");
  EXPECT_EQ(error_of(with_demo("[server]\nadmin_key = \"short\"\n")),
            "server.admin_key must be at least 16 bytes");
}

TEST(Config, AdminKeyMustDifferFromEveryApiKey) {
  const std::string doc = std::string(kDemo) + "[server]\nadmin_key = \"" +
                          "same-key-0123456789\"\n";
  auto r = parse_config(doc);
  ASSERT_TRUE(r);  // kDemo's api_key differs
  std::string same = doc;
  const auto at = same.find("api_key = \"");
  ASSERT_NE(at, std::string::npos);
  const auto end = same.find('"', at + 11);
  same.replace(at + 11, end - (at + 11), "same-key-0123456789");
  EXPECT_EQ(error_of(same), "server.admin_key is the same as tenants.demo.api_key");
}

TEST(Config, ValkeyStoreAndItsSection) {
  auto r = parse_config(with_demo("[server]\nstore = \"valkey\"\n[valkey]\n"
                                  "nodes = [\"127.0.0.1:7001\", \"127.0.0.1:7002\"]\ncluster = true\n"
                                  "partitions = 128\npool_size = 4\ncommand_timeout_ms = 500\n"
                                  "wal_max_len = 50000\n"));
  ASSERT_TRUE(r.is_ok()) << r.error().msg;
  EXPECT_EQ(r->store, "valkey");
  EXPECT_EQ(r->valkey.nodes, (std::vector<std::string>{"127.0.0.1:7001", "127.0.0.1:7002"}));
  EXPECT_TRUE(r->valkey.cluster);
  EXPECT_EQ(r->valkey.partitions, 128u);
  EXPECT_EQ(r->valkey.pool_size, 4u);
  EXPECT_EQ(r->valkey.command_timeout_ms, 500u);
  EXPECT_EQ(r->valkey.wal_max_len, 50000u);
  auto d = parse_config(with_demo("[server]\nstore = \"valkey\"\n"));
  ASSERT_TRUE(d.is_ok());
  EXPECT_EQ(d->valkey.nodes, std::vector<std::string>{"127.0.0.1:6379"});
  EXPECT_EQ(d->valkey.partitions, 64u);
  EXPECT_EQ(d->valkey.pool_size, 2u);
  EXPECT_EQ(error_of(with_demo("[valkey]\nnodes = []\n")),
            "valkey.nodes must list at least one host:port");
  EXPECT_EQ(error_of(with_demo("[valkey]\nnodes = [\"redis:6379\"]\n")).substr(0, 34),
            "valkey.nodes must be host:port ent");
  EXPECT_EQ(error_of(with_demo("[valkey]\npartitions = 0\n")),
            "valkey.partitions must be an integer between 1 and 16384");
  EXPECT_EQ(error_of(with_demo("[valkey]\nreplicas = 2\n")), "unknown key valkey.replicas");
  EXPECT_EQ(error_of(with_demo("[valkey]\npresence_ttl_ms = 999\n")),
            "valkey.presence_ttl_ms must be an integer between 1000 and 60000");
  EXPECT_EQ(error_of(with_demo("[valkey]\npresence_ttl_ms = 60001\n")),
            "valkey.presence_ttl_ms must be an integer between 1000 and 60000");
  auto ttl = parse_config(with_demo("[valkey]\npresence_ttl_ms = 3000\n"));
  ASSERT_TRUE(ttl.is_ok()) << ttl.error().msg;
  EXPECT_EQ(ttl->valkey.presence_ttl_ms, 3000u);
  EXPECT_EQ(parse_config(kDemo)->valkey.presence_ttl_ms, 15000u);
}

TEST(Config, PostgresAndPersistSections) {
  auto r = parse_config(with_demo("[valkey]\nwal_hard_cap = 5000\n"
                                  "[postgres]\nurl = \"postgresql://p@127.0.0.1:5432/parley\"\n"
                                  "readers = 3\ntimeout_ms = 800\n"
                                  "[persist]\nlisten = \"127.0.0.1:0\"\ngroup = \"g\"\nconsumer = \"c1\"\n"
                                  "batch = 64\nthreads = 2\npoll_ms = 5\nclaim_idle_ms = 1500\n"
                                  "trim_interval_ms = 250\n"));
  ASSERT_TRUE(r.is_ok()) << r.error().msg;
  EXPECT_EQ(r->valkey.wal_hard_cap, 5000u);
  EXPECT_EQ(r->postgres.url, "postgresql://p@127.0.0.1:5432/parley");
  EXPECT_EQ(r->postgres.readers, 3u);
  EXPECT_EQ(r->postgres.timeout_ms, 800u);
  EXPECT_EQ(r->persist.listen, "127.0.0.1:0");
  EXPECT_EQ(r->persist.group, "g");
  EXPECT_EQ(r->persist.consumer, "c1");
  EXPECT_EQ(r->persist.batch, 64u);
  EXPECT_EQ(r->persist.threads, 2u);
  EXPECT_EQ(r->persist.poll_ms, 5u);
  EXPECT_EQ(r->persist.claim_idle_ms, 1500u);
  EXPECT_EQ(r->persist.trim_interval_ms, 250u);
  auto d = parse_config(kDemo);
  ASSERT_TRUE(d.is_ok());
  EXPECT_EQ(d->postgres.url, "");
  EXPECT_EQ(d->valkey.wal_hard_cap, 1000000u);
  EXPECT_EQ(d->persist.listen, "127.0.0.1:7710");
  EXPECT_EQ(d->persist.group, "parley-persister");
  EXPECT_EQ(d->persist.claim_idle_ms, 30000u);
  EXPECT_EQ(error_of(with_demo("[postgres]\nurl = \"\"\n")), "postgres.url must not be empty");
  EXPECT_EQ(error_of(with_demo("[postgres]\nhost = \"x\"\n")), "unknown key postgres.host");
  EXPECT_EQ(error_of(with_demo("[persist]\nbatch = 0\n")),
            "persist.batch must be an integer between 1 and 10000");
}

TEST(Config, DynamodbSection) {
  auto r = parse_config(with_demo("[dynamodb]\ntable = \"chat\"\nregion = \"eu-west-1\"\n"
                                  "endpoint = \"http://127.0.0.1:4567\"\naccess_key_id = \"AK\"\n"
                                  "secret_access_key = \"SK\"\nsession_token = \"T\"\nca_file = \"/ca.pem\"\n"
                                  "timeout_ms = 900\nspread = 4\ncreate_table = false\nreaders = 3\n"));
  ASSERT_TRUE(r.is_ok()) << r.error().msg;
  EXPECT_TRUE(r->dynamodb.enabled);
  EXPECT_EQ(r->dynamodb.table, "chat");
  EXPECT_EQ(r->dynamodb.region, "eu-west-1");
  EXPECT_EQ(r->dynamodb.endpoint, "http://127.0.0.1:4567");
  EXPECT_EQ(r->dynamodb.access_key_id, "AK");
  EXPECT_EQ(r->dynamodb.secret_access_key, "SK");
  EXPECT_EQ(r->dynamodb.session_token, "T");
  EXPECT_EQ(r->dynamodb.ca_file, "/ca.pem");
  EXPECT_EQ(r->dynamodb.timeout_ms, 900u);
  EXPECT_EQ(r->dynamodb.spread, 4u);
  EXPECT_FALSE(r->dynamodb.create_table);
  EXPECT_EQ(r->dynamodb.readers, 3u);
  // The section alone turns it on, with the defaults.
  auto e = parse_config(with_demo("[dynamodb]\n"));
  ASSERT_TRUE(e.is_ok()) << e.error().msg;
  EXPECT_TRUE(e->dynamodb.enabled);
  EXPECT_EQ(e->dynamodb.table, "parley_messages");
  EXPECT_TRUE(e->dynamodb.create_table);
  EXPECT_FALSE(parse_config(kDemo)->dynamodb.enabled);
  EXPECT_EQ(error_of(with_demo("[dynamodb]\nendpoint = \"dynamodb.local:8000\"\n")),
            "dynamodb.endpoint must start with https:// (or http:// for a local test server)");
  EXPECT_EQ(error_of(with_demo("[dynamodb]\naccess_key_id = \"AK\"\n")),
            "dynamodb.access_key_id and dynamodb.secret_access_key go together");
  EXPECT_EQ(error_of(with_demo("[dynamodb]\nspread = 0\n")), "dynamodb.spread must be an integer between 1 and 100");
  EXPECT_EQ(error_of(with_demo("[dynamodb]\nbucket = \"x\"\n")), "unknown key dynamodb.bucket");
}

TEST(Config, AddressesAreChecked) {
  EXPECT_EQ(error_of(with_demo("[server]\nlisten = \"7700\"\n")),
            "server.listen must be host:port: expected host:port");
  EXPECT_EQ(error_of(with_demo("[server]\nlisten = \"\"\n")),
            "server.listen must be host:port: expected host:port");
  EXPECT_EQ(error_of(with_demo("[server]\ntcp_listen = \"localhost:70000\"\n")),
            "server.tcp_listen must be host:port: the port must be a number from 0 to 65535");
  EXPECT_EQ(error_of(with_demo("[server]\nlisten = \"::1:80\"\n")),
            "server.listen must be host:port: an IPv6 address must be in brackets: [::1]:7700");
  // A name would pass here and then fail (or bind elsewhere) at start.
  EXPECT_EQ(error_of(with_demo("[server]\nlisten = \"example.com:0\"\n")),
            "server.listen must be host:port: the host must be an IP address or localhost, not "
            "a name (\"example.com\")");
  EXPECT_TRUE(parse_config(with_demo("[server]\nlisten = \"[::1]:0\"\ntcp_listen = \"\"\n")).is_ok());
  EXPECT_EQ(error_of(with_demo("[server]\nunix_listen = \"/" + std::string(107, 'a') + "\"\n")),
            "server.unix_listen must be at most 107 bytes");
  EXPECT_EQ(error_of(with_demo("[tenants.demo.namespaces.w]\nupstream = \"ftp://x\"\n")),
            "tenants.demo.namespaces.w.upstream must be an http:// URL");
}

TEST(Config, HooksHaveTheirUrlAndFourKeysEachWithDocumentedDefaults) {
  auto r = parse_config(with_demo(R"(hook_connect = "http://127.0.0.1:9000/c"
hook_connect_fail = "open"
[tenants.demo.namespaces.chat]
hook_join = "http://127.0.0.1:9000/j"
hook_pub = "http://127.0.0.1:9000/p"
hook_pub_timeout_ms = 50
hook_pub_fail = "closed"
hook_pub_max_inflight = 8
hook_pub_queue = 0
)"));
  ASSERT_TRUE(r) << r.error().msg;
  const TenantConfig& t = r->tenants.at("demo");
  EXPECT_EQ(t.hook_connect.url, "http://127.0.0.1:9000/c");
  EXPECT_TRUE(t.hook_connect.fail_open);
  const NamespaceConfig& chat = t.ns("chat");
  EXPECT_EQ(chat.hook_join.url, "http://127.0.0.1:9000/j");
  EXPECT_EQ(chat.hook_join.timeout_ms, 200u);
  EXPECT_FALSE(chat.hook_join.fail_open);
  EXPECT_EQ(chat.hook_join.max_inflight, 64u);
  EXPECT_EQ(chat.hook_join.queue, 256u);
  EXPECT_EQ(chat.hook_pub.timeout_ms, 50u);
  EXPECT_EQ(chat.hook_pub.max_inflight, 8u);
  EXPECT_EQ(chat.hook_pub.queue, 0u);
  EXPECT_TRUE(t.ns("other").hook_pub.url.empty());
}

TEST(Config, HookValuesAreChecked) {
  EXPECT_EQ(error_of(with_demo("[tenants.demo.namespaces.w]\nhook_pub = \"https://x\"\n")),
            "tenants.demo.namespaces.w.hook_pub must be an http:// URL or unix:/path/of/a/socket");
  EXPECT_EQ(error_of(with_demo("[tenants.demo.namespaces.w]\nhook_join_fail = \"maybe\"\n")),
            "tenants.demo.namespaces.w.hook_join_fail must be \"open\" or \"closed\"");
  EXPECT_EQ(error_of(with_demo("[tenants.demo.namespaces.w]\nhook_pub_timeout_ms = 0\n")),
            "tenants.demo.namespaces.w.hook_pub_timeout_ms must be an integer between 1 and 60000");
  EXPECT_EQ(error_of(with_demo("hook_connect_max_inflight = 0\n")),
            "tenants.demo.hook_connect_max_inflight must be an integer between 1 and 100000");
  EXPECT_EQ(error_of(with_demo("[tenants.demo.namespaces.w]\nhook_state = \"http://x/\"\n")),
            "unknown key tenants.demo.namespaces.w.hook_state");
}

TEST(Config, TenantAndNamespaceNamesUseTheChannelCharset) {
  EXPECT_EQ(error_of(R"([tenants."bad id"]
secret = "0123456789abcdef"
api_key = "k"
)"),
            "tenants.bad id: tenant ids are 1-128 chars of [A-Za-z0-9_.:@-]");
  EXPECT_EQ(error_of(with_demo("[tenants.demo.namespaces.\"chat:x\"]\n")),
            "tenants.demo.namespaces.chat:x: namespace names are 1-128 chars of [A-Za-z0-9_.@-]");
  EXPECT_TRUE(parse_config(R"([tenants."a.b:c@d_e-f"]
secret = "0123456789abcdef"
api_key = "k"
)")
                  .is_ok());
}

TEST(Config, TenantNeedsASecretOfSixteenBytesAndAnApiKey) {
  EXPECT_EQ(error_of("[tenants.demo]\napi_key = \"k\"\n"), "tenants.demo.secret is required");
  EXPECT_EQ(error_of("[tenants.demo]\nsecret = \"0123456789abcdef\"\n"),
            "tenants.demo.api_key is required");
  EXPECT_EQ(error_of("[tenants.demo]\nsecret = \"0123456789abcde\"\napi_key = \"k\"\n"),
            "tenants.demo.secret must be at least 16 bytes");
  EXPECT_EQ(error_of("[tenants.demo]\nsecret = \"0123456789abcdef\"\napi_key = \"\"\n"),
            "tenants.demo.api_key must not be empty");
}

TEST(Config, ErrorsNeverEchoSecrets) {
  std::string msg = error_of("[tenants.demo]\nsecret = \"short-secret\"\napi_key = \"k\"\n");
  EXPECT_EQ(msg.find("short-secret"), std::string::npos) << msg;
}

TEST(Config, AtLeastOneTenantIsRequired) {
  EXPECT_EQ(error_of(""), "no tenants configured: add a [tenants.<id>] table");
  EXPECT_EQ(error_of("[server]\nthreads = 2\n[tenants]\n"),
            "no tenants configured: add a [tenants.<id>] table");
}

TEST(Config, ApiKeysAndSecretsMustDifferAcrossTenants) {
  EXPECT_EQ(error_of(with_demo(R"(
[tenants.other]
secret = "fedcba9876543210"
api_key = "k1"
)")),
            "tenants.other.api_key is the same as tenants.demo.api_key");
  EXPECT_EQ(error_of(with_demo(R"(
[tenants.other]
secret = "0123456789abcdef"
api_key = "k2"
)")),
            "tenants.other.secret is the same as tenants.demo.secret");
}

TEST(Config, SyntaxErrorsGiveTheirPositionWithoutThrowing) {
  Result<ServerConfig> r = ServerConfig{};
  EXPECT_NO_THROW(r = parse_config("[server\nlisten = 1"));
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.error().msg.rfind("TOML syntax error at line 1, column ", 0), 0u) << r.error().msg;
  EXPECT_NO_THROW(r = parse_config(with_demo("api_key = \"again\"\n")));  // duplicate key
  EXPECT_FALSE(r.is_ok());
}

class ConfigFile : public ::testing::Test {
 protected:
  std::string path_ = ::testing::TempDir() + "parley_config_test_" +
                      ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".toml";
  void write(std::string_view text) { std::ofstream(path_) << text; }
  void TearDown() override { std::remove(path_.c_str()); }
};

TEST_F(ConfigFile, LoadsAFile) {
  write(kDemo);
  auto r = load_config_file(path_);
  ASSERT_TRUE(r.is_ok()) << r.error().msg;
  EXPECT_EQ(r->tenants.at("demo").api_key, "k1");
}

TEST_F(ConfigFile, MissingFileErrorNamesThePath) {
  auto r = load_config_file(path_);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.error().msg, "cannot read config file " + path_ + ": No such file or directory");
}

TEST_F(ConfigFile, ContentErrorsArePrefixedWithThePath) {
  write(with_demo("bogus = 1\n"));
  auto r = load_config_file(path_);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.error().msg, path_ + ": unknown key tenants.demo.bogus");
}

TEST(Config, DemoConfigIsTheDocumentedDevelopmentSetup) {
  ServerConfig c = demo_config();
  EXPECT_EQ(c.listen, "127.0.0.1:7700");
  EXPECT_EQ(c.store, "embedded");
  EXPECT_EQ(c.data_dir, "./data");
  ASSERT_EQ(c.tenants.size(), 1u);
  const TenantConfig& t = c.tenants.at("demo");
  EXPECT_EQ(t.id, "demo");
  EXPECT_EQ(t.secret, "demo-secret-change-me-0123456789");
  EXPECT_GE(t.secret.size(), 16u);
  EXPECT_EQ(t.api_key, "demo-api-key");
  const NamespaceConfig& world = t.ns("world");
  EXPECT_FALSE(world.durable);
  EXPECT_EQ(world.tick_ms, 20u);
  EXPECT_TRUE(world.presence);
  EXPECT_EQ(world.history, 1000u);
  EXPECT_TRUE(t.ns("chat").durable);  // everything else keeps the defaults
}

TEST(Config, DemoConfigWrittenAsTomlParsesToTheSame) {
  auto r = parse_config(R"(
[tenants.demo]
secret = "demo-secret-change-me-0123456789"
api_key = "demo-api-key"
[tenants.demo.namespaces.world]
durable = false
tick_ms = 20
presence = true
)");
  ASSERT_TRUE(r.is_ok()) << r.error().msg;
  ServerConfig d = demo_config();
  EXPECT_EQ(r->listen, d.listen);
  EXPECT_EQ(r->tenants.at("demo").secret, d.tenants.at("demo").secret);
  EXPECT_EQ(r->tenants.at("demo").ns("world").durable, d.tenants.at("demo").ns("world").durable);
}

}  // namespace
}  // namespace parley::server

namespace parley::server {
namespace {

TEST(Config, HostileClientLimitsAndTlsKeysAreRead) {
  auto r = parse_config("[server]\npreauth_frame_bytes = 4096\npreauth_memory_bytes = 1048576\n"
                        "http_idle_timeout_ms = 2000\ntls_cert = \"c.pem\"\ntls_key = \"k.pem\"\n"
                        "tcp_tls = true\n" + with_demo(""));
  ASSERT_TRUE(r.is_ok()) << r.error().msg;
  EXPECT_EQ(r->preauth_frame_bytes, 4096u);
  EXPECT_EQ(r->preauth_memory_bytes, 1048576u);
  EXPECT_EQ(r->http_idle_timeout_ms, 2000u);
  EXPECT_EQ(r->tls_cert, "c.pem");
  EXPECT_TRUE(r->tcp_tls);
  auto d = parse_config(with_demo(""));
  ASSERT_TRUE(d.is_ok());
  EXPECT_EQ(d->preauth_frame_bytes, 8192u);
  EXPECT_EQ(d->preauth_memory_bytes, 64ull << 20);
  EXPECT_EQ(d->http_idle_timeout_ms, 5000u);
  EXPECT_FALSE(d->tcp_tls);
}

TEST(Config, UnauthenticatedSocketBudgetIsReadAndBounded) {
  auto r = parse_config("[server]\npreauth_max_connections = 300\npreauth_max_per_address = 20\n" +
                        with_demo(""));
  ASSERT_TRUE(r.is_ok()) << r.error().msg;
  EXPECT_EQ(r->preauth_max_connections, 300u);
  EXPECT_EQ(r->preauth_max_per_address, 20u);
  auto d = parse_config(with_demo(""));
  ASSERT_TRUE(d.is_ok());
  EXPECT_EQ(d->preauth_max_connections, 2048u);
  EXPECT_EQ(d->preauth_max_per_address, 512u);
  EXPECT_NE(error_of("[server]\npreauth_max_connections = 0\n" + with_demo("")), "<accepted>");
  EXPECT_NE(error_of("[server]\npreauth_max_per_address = 0\n" + with_demo("")), "<accepted>");
}

TEST(Config, TcpTlsWithoutCertificateIsRefused) {
  EXPECT_EQ(error_of("[server]\ntcp_tls = true\n" + with_demo("")),
            "server.tcp_tls needs server.tls_cert and server.tls_key");
  EXPECT_EQ(error_of("[server]\nlisten_tls = true\ntls_cert = \"c.pem\"\n" + with_demo("")),
            "server.listen_tls needs server.tls_cert and server.tls_key");
  EXPECT_NE(error_of("[server]\npreauth_frame_bytes = 10\n" + with_demo("")), "<accepted>");
}

TEST(ConfigEvents, ParsesTopicAndLeaderboardKeys) {
  auto r = parse_config(with_demo(R"(events_per_sec = 5000
[tenants.demo.topics.hunt]
partitions = 4
retention = 500
retention_s = 60
tick_ms = 5
dedupe_window_s = 30

[tenants.demo.leaderboards.hunt]
topic = "hunt"
type = "score"
member = "player"
score = "points"
agg = "max"
round = "round"
order = "asc"
top = 3
interval_ms = 100
)"));
  ASSERT_TRUE(r.is_ok()) << r.error().msg;
  const TenantConfig& t = r->tenants.at("demo");
  EXPECT_EQ(t.events_per_sec, 5000u);
  const TopicConfig* topic = t.topic("hunt");
  ASSERT_NE(topic, nullptr);
  EXPECT_EQ(topic->partitions, 4u);
  EXPECT_EQ(topic->retention, 500u);
  EXPECT_EQ(topic->retention_s, 60u);
  EXPECT_EQ(topic->tick_ms, 5u);
  EXPECT_EQ(topic->dedupe_window_s, 30u);
  const LeaderboardConfig& lb = t.leaderboards.at("hunt");
  EXPECT_EQ(lb.topic, "hunt");
  EXPECT_EQ(lb.type, "score");
  EXPECT_EQ(lb.member, "player");
  EXPECT_EQ(lb.score, "points");
  EXPECT_EQ(lb.agg, "max");
  EXPECT_EQ(lb.round, "round");
  EXPECT_EQ(lb.order, "asc");
  EXPECT_EQ(lb.top, 3u);
  EXPECT_EQ(lb.interval_ms, 100u);
}

TEST(ConfigEvents, OmittedKeysTakeTheProtocolDefaults) {
  auto r = parse_config(with_demo(R"(
[tenants.demo.topics.t]
[tenants.demo.leaderboards.b]
topic = "t"
type = "score"
member = "m"
score = "s"
)"));
  ASSERT_TRUE(r.is_ok()) << r.error().msg;
  const TenantConfig& t = r->tenants.at("demo");
  EXPECT_EQ(t.events_per_sec, 0u);
  const TopicConfig& topic = *t.topic("t");
  EXPECT_EQ(topic.partitions, 16u);
  EXPECT_EQ(topic.tick_ms, 0u);
  EXPECT_EQ(topic.dedupe_window_s, 120u);
  const LeaderboardConfig& lb = t.leaderboards.at("b");
  EXPECT_EQ(lb.agg, "sum");
  EXPECT_EQ(lb.order, "desc");
  EXPECT_EQ(lb.round, "");
  EXPECT_EQ(lb.top, 10u);
  EXPECT_EQ(lb.interval_ms, 200u);
  EXPECT_EQ(t.topic("nope"), nullptr);
}

TEST(ConfigEvents, UnknownKeysAreNamed) {
  EXPECT_EQ(error_of(with_demo("[tenants.demo.topics.t]\npartition = 4\n")),
            "unknown key tenants.demo.topics.t.partition");
  EXPECT_EQ(error_of(with_demo("[tenants.demo.topics.t]\n[tenants.demo.leaderboards.b]\n"
                               "topic = \"t\"\ntype = \"x\"\nmember = \"m\"\nscore = \"s\"\n"
                               "sort = \"desc\"\n")),
            "unknown key tenants.demo.leaderboards.b.sort");
}

TEST(ConfigEvents, ValuesAreChecked) {
  EXPECT_EQ(error_of(with_demo("[tenants.demo.topics.t]\npartitions = 0\n")),
            "tenants.demo.topics.t.partitions must be an integer between 1 and 1024");
  EXPECT_EQ(error_of(with_demo("[tenants.demo.topics.\"bad/name\"]\n")),
            "tenants.demo.topics.bad/name: names are 1-128 chars of [A-Za-z0-9_.:@-]");
  EXPECT_EQ(error_of(with_demo("[tenants.demo.topics.t]\n[tenants.demo.leaderboards.b]\n"
                               "topic = \"t\"\ntype = \"x\"\nmember = \"m\"\nscore = \"s\"\n"
                               "agg = \"avg\"\n")),
            "tenants.demo.leaderboards.b.agg must be one of sum, max, min, last");
  EXPECT_EQ(error_of(with_demo("[tenants.demo.leaderboards.b]\ntopic = \"t\"\ntype = \"x\"\n"
                               "member = \"m\"\nscore = \"s\"\n")),
            "tenants.demo.leaderboards.b.topic: no topic \"t\" in tenants.demo.topics");
  EXPECT_EQ(error_of(with_demo("[tenants.demo.topics.t]\n[tenants.demo.leaderboards.b]\n"
                               "topic = \"t\"\ntype = \"x\"\nmember = \"m\"\n")),
            "tenants.demo.leaderboards.b.score is required");
  EXPECT_EQ(error_of(with_demo("events_per_sec = -1\n")),
            "tenants.demo.events_per_sec must be an integer between 0 and 1000000000");
}

TEST(Config, AoiCellIsZeroByDefaultAndAPositiveNumberOfWorldUnits) {
  auto none = parse_config(with_demo(""));
  ASSERT_TRUE(none.is_ok());
  EXPECT_EQ(none.value().tenants.at("demo").ns("world").aoi_cell, 0.0);
  auto r = parse_config(with_demo("[tenants.demo.namespaces.w]\naoi_cell = 12.5\n"
                                  "[tenants.demo.namespaces.v]\naoi_cell = 64\n"));
  ASSERT_TRUE(r.is_ok()) << r.error().msg;
  EXPECT_EQ(r.value().tenants.at("demo").ns("w").aoi_cell, 12.5);
  EXPECT_EQ(r.value().tenants.at("demo").ns("v").aoi_cell, 64.0);
  const std::string msg = "tenants.demo.namespaces.w.aoi_cell must be 0 or a number between 0.001 and 1e12";
  for (const char* bad : {"-1", "0.0001", "2e12", "\"10\"", "nan", "inf", "true"}) {
    EXPECT_EQ(error_of(with_demo(std::string("[tenants.demo.namespaces.w]\naoi_cell = ") + bad + "\n")),
              msg) << bad;
  }
}

}  // namespace
}  // namespace parley::server
