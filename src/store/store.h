// The Store: where a channel's sequenced messages and dedupe entries live.
//
// One interface, several implementations (memory, embedded, later valkey),
// one conformance suite (store_conformance_test.cc) that each passes.
//
// Threading: every method may be called from any thread. Sequencing is NOT the
// store's job: the hub shard that owns a channel assigns seq numbers and calls
// append() in seq order; the store persists them in that order and reports
// completion in that order per channel.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"

namespace parley::store {

// Identifies a channel across tenants: the same channel name in two tenants is
// two different keys.
struct ChannelKey {
  std::string tenant;
  std::string channel;
  bool operator==(const ChannelKey&) const = default;
};

struct StoredMessage {
  uint64_t seq = 0;
  int64_t ts_ms = 0;      // server time of acceptance
  std::string from;       // sender user id ("server" for the HTTP API)
  std::string id;         // client message id (dedupe key); may be empty for HTTP publishes
  std::string body;       // valid JSON text
};

struct DedupeEntry {
  std::string from;
  std::string id;
  uint64_t seq = 0;
  int64_t ts_ms = 0;
};

// What a hub shard needs to take ownership of a channel after a restart.
struct ChannelRecovery {
  uint64_t last_seq = 0;             // 0: channel never written
  std::vector<DedupeEntry> dedupe;   // entries with ts_ms >= the asked cutoff
};

struct AppendRequest {
  ChannelKey key;
  StoredMessage msg;
  uint32_t history_limit = 1000;  // the store keeps at least this many latest messages
  uint32_t dedupe_window_s = 120; // how long (from, id) must stay recoverable
};

using AppendDone = std::function<void(Status)>;

class Store {
 public:
  virtual ~Store() = default;

  // Blocking; call once per channel before its first append (any thread).
  virtual Result<ChannelRecovery> recover(const ChannelKey& key, int64_t dedupe_cutoff_ms) = 0;

  // Persists msg and its (from, id) dedupe entry atomically. `done` runs once,
  // on a store thread or inline, after the write is durable (per the store's
  // durability setting) or has failed. Appends of one channel complete in the
  // order they were submitted. After a failure the store fails every later
  // append with kUnavailable until it recovers, so no seq gap is ever written.
  virtual void append(AppendRequest req, AppendDone done) = 0;

  // Committed messages with seq > after, oldest first, at most `limit`.
  virtual Result<std::vector<StoredMessage>> read_after(const ChannelKey& key, uint64_t after,
                                                        uint32_t limit) = 0;
  // Committed messages with seq < before, the `limit` newest of them, oldest first.
  virtual Result<std::vector<StoredMessage>> read_before(const ChannelKey& key, uint64_t before,
                                                         uint32_t limit) = 0;

  // Blocks until every append submitted so far has completed (drain on stop).
  virtual void flush() = 0;
  // Number of appends submitted and not yet completed (a queue-depth metric).
  virtual size_t pending() const = 0;
};

enum class FsyncMode { kNever, kAlways };

struct EmbeddedOptions {
  std::string dir;                 // created when missing
  FsyncMode fsync = FsyncMode::kNever;  // kNever survives kill -9, kAlways power loss
  size_t max_batch = 4096;         // appends per group commit
};

std::unique_ptr<Store> make_memory_store();
// Opens (or creates) the embedded store. Error when the directory is unusable
// or held by another process.
Result<std::unique_ptr<Store>> open_embedded_store(const EmbeddedOptions& opts);

}  // namespace parley::store
