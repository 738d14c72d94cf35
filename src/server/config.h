// The server's configuration, read from TOML (PROTOCOL.md "Configuration file").
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tenant/tenant_config.h"
#include "common/status.h"

namespace parley::server {

// [valkey]: only read with store = "valkey" (docs/operations.md, "Running on Valkey").
struct ValkeyConfig {
  std::vector<std::string> nodes = {"127.0.0.1:6379"};  // host:port; seeds when cluster
  bool cluster = false;
  uint32_t partitions = 64;
  uint32_t pool_size = 2;             // pipelined connections per node
  uint32_t command_timeout_ms = 2000; // a node silent this long is unreachable
  uint64_t wal_max_len = 100'000;     // entries kept per partition's WAL stream (approx.)
  // With [postgres] url set the persister trims the WAL below what it has
  // acknowledged; the append script then only caps each stream at this many
  // entries (approx.), a safety valve for Valkey's memory while no persister runs.
  uint64_t wal_hard_cap = 1'000'000;
  uint32_t fanout_gap_ms = 50;        // a log's gap older than this is read from the store
  uint64_t fanout_max_held = 4096;    // entries a log holds ahead of a gap; later ones are read
  uint32_t fanout_fill_page = 512;    // entries per gap-fill read
  // A node's presence entries expire this long after its last refresh (every
  // third of it): how long the users of a node that died stay present elsewhere.
  uint32_t presence_ttl_ms = 15'000;
  // Cluster: the slot map is read again this often while every node answers.
  uint32_t topology_refresh_ms = 2000;
  // An append's ack also waits until this many replicas have it (WAIT), at most
  // wait_timeout_ms; fewer in time: `unavailable` (docs/operations.md "Durability").
  uint32_t wait_replicas = 0;
  uint32_t wait_timeout_ms = 1000;
  bool operator==(const ValkeyConfig&) const = default;
};

// [postgres]: the persister's database. With store = "valkey" and url set, the
// nodes read history older than Valkey keeps from it and leave WAL trimming to
// the persister (docs/operations.md, "The persister").
struct PostgresConfig {
  std::string url;              // libpq URI or key=value string; empty: none
  uint32_t readers = 2;         // per node: history reader threads and connections
  uint32_t timeout_ms = 5000;   // per connect and per statement
  bool operator==(const PostgresConfig&) const = default;
};

// [dynamodb]: a DynamoDB table as the persister's sink (beside [postgres] or
// instead of it) and, without [postgres], where the nodes read history Valkey
// no longer keeps (docs/operations.md, "DynamoDB"). The section's presence
// turns it on; empty region and credentials come from AWS_REGION,
// AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN.
struct DynamoConfig {
  bool enabled = false;         // the section is there
  std::string table = "parley_messages";
  std::string region;           // empty: AWS_REGION
  std::string endpoint;         // empty: https://dynamodb.<region>.amazonaws.com
  std::string access_key_id;    // empty: AWS_ACCESS_KEY_ID (and the secret and token from the env too)
  std::string secret_access_key;
  std::string session_token;
  std::string ca_file;          // empty: the system's trust store
  uint32_t timeout_ms = 5000;   // per HTTP step (connect, write, read)
  uint32_t spread = 1;          // partition keys per channel (a hot channel); fixed once data exists
  bool create_table = true;     // CreateTable (on-demand) when the table is missing
  uint32_t readers = 2;         // per node: history reader threads
  bool operator==(const DynamoConfig&) const = default;
};

// [persist]: read by `parley persist` only.
struct PersistConfig {
  std::string listen = "127.0.0.1:7710";  // GET /metrics and /healthz
  std::string group = "parley-persister"; // the consumer group on every WAL stream
  std::string consumer;                   // empty: <hostname>-<pid>
  uint32_t batch = 500;                   // entries read per stream and round
  uint32_t threads = 1;
  uint32_t poll_ms = 50;                  // wait after a round that read nothing
  uint32_t claim_idle_ms = 30'000;        // another consumer's pending entry is taken after
  uint32_t trim_interval_ms = 1000;
  bool operator==(const PersistConfig&) const = default;
};

struct ServerConfig {
  std::string listen = "127.0.0.1:7700";  // WebSocket + HTTP
  std::string tcp_listen;                 // optional
  std::string unix_listen;                // optional, a socket path
  std::string store = "embedded";         // embedded | memory | valkey
  std::string data_dir = "./data";
  std::string fsync = "never";            // never | always
  // Where the embedded store keeps topic partitions: rocksdb | segment (the
  // segment log, store/segment/segment_log.h; docs/operations.md "Topic log").
  // Empty (unset): segment, or rocksdb on a data directory written before that
  // was the default (Server::open_stores).
  std::string topic_log;
  // A start whose store recovery finds damaged data refuses (exit 1) unless set:
  // then it starts with what is readable and bumps the epoch (docs/operations.md).
  bool accept_data_loss = false;
  // At start, the embedded store verifies its newest table files' checksums up
  // to this many bytes, on a reader thread (0: off; docs/operations.md).
  uint64_t store_verify_bytes = 256ull << 20;
  uint32_t threads = 0;                   // event loops; 0: one per core
  uint32_t heartbeat_ms = 25000;
  uint32_t hello_timeout_ms = 10000;
  // Each event loop thread's scheduler slice (runtime/thread_slice.h); 0: the
  // kernel's default. Off by default: it pays with one loop (threads = 1) and
  // costs with two (`git show b684f50:bench/results/7ca8535/lean/README.md`).
  uint32_t loop_slice_us = 0;
  uint32_t append_queue_limit = 20000;    // in-flight appends per hub shard
  uint32_t max_connections = 19000;       // authenticated sockets (HTTP past a request included)
  // Before `hello`: the largest frame, and what every unauthenticated
  // connection's read buffers may hold together (docs/operations.md).
  uint32_t preauth_frame_bytes = 8 * 1024;
  uint64_t preauth_memory_bytes = 64ull << 20;
  // Sockets before `hello` (or before a whole HTTP request), apart from
  // max_connections: at either limit the oldest such socket is closed to
  // admit a new one (net/preauth_budget.h, docs/operations.md).
  uint32_t preauth_max_connections = 2048;
  uint32_t preauth_max_per_address = 512;
  // An HTTP connection must send a complete request header within this long
  // (after connecting, and between keep-alive requests).
  uint32_t http_idle_timeout_ms = 5000;
  // TLS: a PEM certificate chain and key, used by the listeners that ask for it.
  std::string tls_cert;
  std::string tls_key;
  bool tcp_tls = false;     // tcp_listen speaks TLS (the raw TCP framing inside it)
  bool listen_tls = false;  // listen speaks TLS: wss:// and https for the HTTP API
  // durable = false history, all channels together; over it the history of the
  // channels written least recently goes first. 0: no budget.
  uint64_t ephemeral_memory_bytes = 256ull << 20;
  // An idle channel (no member, nothing in flight) is unloaded from the hub after
  // this; the stores forget their own state of it after twice this.
  uint32_t channel_idle_s = 60;
  std::string log_level = "info";
  // The bearer key of /admin and /admin/api/stats; empty: the admin page is off.
  std::string admin_key;
  std::string log_format = "text";        // text | json (one object per line, server/json_log.h)
  std::map<std::string, TenantConfig, std::less<>> tenants;
  ValkeyConfig valkey;
  PostgresConfig postgres;
  DynamoConfig dynamodb;
  PersistConfig persist;
};

// Parses a TOML document. Unknown keys are errors (a typo must not silently
// fall back to a default). The error names every problem found, one per line
// (a TOML syntax error stops the reading: one line), each naming its key;
// load_config_file starts each line with the file's path.
Result<ServerConfig> parse_config(std::string_view toml_text);
Result<ServerConfig> load_config_file(const std::string& path);
// Only the [server] section of the file checked (the rest may be invalid):
// what `parley reload` needs to reach the server that will judge the rest.
Result<ServerConfig> load_server_section(const std::string& path);

// The configuration `parley serve` uses without --config: 127.0.0.1:7700, the
// embedded store in ./data and a tenant "demo" with fixed development keys.
ServerConfig demo_config();

}  // namespace parley::server
