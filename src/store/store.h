// The Store: where a channel's sequenced messages and dedupe entries live: the
// log, and nothing about the other nodes (src/cluster/ holds that).
//
// One interface, several implementations (memory, embedded, later valkey),
// one conformance suite (store_conformance_test.cc) that each passes.
//
// Asynchronous: no call waits for I/O (except flush(), for shutdown). Each call
// completes through its callback, exactly once, on a store thread or inline on the
// calling thread; a caller must never assume either. The hub posts every
// completion back to the loop that asked (docs/architecture.md, "The Store
// interface", says which thread runs what and how a shared store maps each call to
// round trips).
//
// Sequencing: for the memory and embedded stores the hub shard that owns a
// channel proposes the seq and calls append() in seq order; the store persists in
// that order, completes in that order per channel, and echoes the seq. The shape
// of AppendOutcome (Appended) lets a shared store (valkey: one server-side script does
// dedupe + INCR + XADD) answer with the seq it assigned, or with the original seq
// of a duplicate (dup = true).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"
#include "store/channel_id.h"

namespace parley::store {

// The store's name for a channel (the record codec and the tests use it).
using ChannelKey = ChannelId;

// What a log entry is (PROTOCOL.md "Moderation: delete and edit"): a message,
// or a moderation event of its own seq naming the message it changes (target).
enum class EntryKind : uint8_t { kMsg = 0, kEdit = 1, kDelete = 2 };

struct StoredMessage {
  uint64_t seq = 0;
  int64_t ts_ms = 0;      // server time of acceptance
  std::string from;       // sender user id ("server" for the HTTP API)
  std::string id;         // client message id (dedupe key); may be empty for HTTP publishes
  std::string body;       // valid JSON text
  // The channel's epoch (ChannelRecovery::epoch) as the store knew it when it
  // handed this message over; 0: the store does not say (valkey says it, so
  // that a node with the channel loaded learns of a loss from the next message).
  uint32_t epoch = 0;
  // Moderation. An event: kind kEdit (body: the new body) or kDelete (body
  // "null"), target the seq it changes, from who did it. A message (kMsg) in
  // its current version: edited_ms the time of its latest edit (0: never),
  // deleted a tombstone (body "null").
  EntryKind kind = EntryKind::kMsg;  // beside epoch: in its padding
  bool deleted = false;
  uint64_t target = 0;
  int64_t edited_ms = 0;
};

struct DedupeEntry {
  std::string from;
  std::string id;
  uint64_t seq = 0;
  int64_t ts_ms = 0;
};

// A remembered id as a topic partition's window keeps it (store/dedupe_index.h):
// the fingerprint of its DedupeKey's bytes, no key. 24 bytes where a DedupeEntry
// is 80 plus whatever its strings take beyond their inline capacity.
struct DedupeMark {
  uint64_t fp = 0;
  uint64_t seq = 0;
  int64_t ts_ms = 0;
};
// The fingerprint of a DedupeKey's bytes (DedupeKey::append): the window's own
// function, so that a recovered mark matches what a retry hashes to.
using KeyHashFn = uint64_t (*)(std::string_view key_bytes);

// What a hub shard needs to take ownership of a channel after a restart.
struct ChannelRecovery {
  // 0: channel never written. After a start that accepted data loss this is at least
  // the store's loss floor, so a seq that may have been acknowledged before the loss
  // is never handed out again (it jumps instead).
  uint64_t last_seq = 0;
  uint32_t epoch = 1;                // bumped by each start that accepted data loss
  // Entries with ts_ms >= the asked cutoff, one per (from, id): its newest seq.
  std::vector<DedupeEntry> dedupe;
  // recover_marks() only: the same entries as fingerprints, `dedupe` left empty
  // (oldest first is not promised; several marks of one id may come back).
  std::vector<DedupeMark> marks;
};

struct AppendRequest {
  ChannelKey key;
  StoredMessage msg;
  uint32_t history_limit = 1000;  // the store keeps at least this many latest messages
  uint32_t dedupe_window_s = 120; // how long (from, id) must stay recoverable
  uint32_t history_ttl_s = 0;     // memory store: messages older than this may go; 0: no bound
  // A moderation event (msg.kind != kMsg): the target's new current version,
  // written atomically with the event. The store numbering the log (valkey)
  // builds it itself; the others take it as given. A target the store no
  // longer holds (trimmed) is not written back.
  std::optional<StoredMessage> amended;
};

// Where an append landed: its seq (the one proposed in the request, for stores
// that take the caller's seq), and dup: the (from, id) was already stored and seq
// is the original's (a store that owns dedupe; never set by memory/embedded).
struct Appended {
  uint64_t seq = 0;
  bool dup = false;
  uint32_t epoch = 0;  // the channel's epoch after it, when the store says (see StoredMessage)
};
// How an append ended: the one outcome of an append, from the store through
// the sequenced log (seqlog/) to the client's ack or `emitted`.
using AppendOutcome = Result<Appended>;

using AppendDone = std::function<void(AppendOutcome)>;
using RecoverDone = std::function<void(Result<ChannelRecovery>)>;
using ReadDone = std::function<void(Result<std::vector<StoredMessage>>)>;

// Whether the store takes writes, and why not. Reported by /healthz and /metrics.
struct StoreHealth {
  bool writable = true;
  std::string reason;      // when refusing: a short code (disk_full, too_many_open_files,
                           // io_error, corruption, store_error); never a path
  std::string detail;      // the store's own words, for the server log only (may name paths)
  int64_t since_ms = 0;    // wall time the refusal began
  uint32_t epoch = 1;      // see ChannelRecovery::epoch
  bool loss_accepted = false;    // this start dropped unreadable data (accept_data_loss)
  uint64_t unreadable_reads = 0; // reads that met corrupt data
  // Files found damaged since start (a checksum failed: the start's check, a
  // read, a compaction). While writable, `reason` is then "corruption" too:
  // /healthz answers 503 although intact channels still read and write.
  uint32_t damaged_files = 0;
  // A store shared over several servers (valkey) that answers for part of its
  // data only: the parts that do not answer ("<tenant>.p<k>" partitions, or
  // "node <ip:port>" before any channel is known), at most kMaxDegraded of them,
  // and how many there are. writable stays true while any part answers.
  std::vector<std::string> degraded;
  size_t degraded_count = 0;
  static constexpr size_t kMaxDegraded = 64;
};

class Store {
 public:
  virtual ~Store() = default;

  // What a shard needs to take ownership of `key`: its last seq and the dedupe
  // entries with ts_ms >= dedupe_cutoff_ms. Call before the channel's first
  // append (and again after a failed one, with nothing in flight).
  virtual void recover(const ChannelKey& key, int64_t dedupe_cutoff_ms, RecoverDone done) = 0;
  // The same, with the dedupe entries handed over as ChannelRecovery::marks
  // (fingerprints by `hash`) instead of strings: a topic partition keeps no keys,
  // and a window of 12 M ids as DedupeEntry strings is a gigabyte for the moment
  // of the hand-over. A store that can hash while it reads (the segment log)
  // never holds the strings; this default converts what recover() returned.
  virtual void recover_marks(const ChannelKey& key, int64_t dedupe_cutoff_ms, KeyHashFn hash,
                             RecoverDone done);

  // Persists msg and its (from, id) dedupe entry atomically. `done` runs once the
  // write is durable (per the store's durability setting) or has failed. Appends
  // of one channel complete in the order they were submitted. After a failure the
  // store fails every later append with kUnavailable until it recovers, so no seq
  // gap is ever written.
  virtual void append(AppendRequest req, AppendDone done) = 0;
  // Several appends, exactly as if append() were called for each in turn; a
  // store may queue them at once (the embedded store: one lock and at most one
  // wake-up of its writer for an emit of 50 events, not one per event).
  virtual void append_many(std::vector<std::pair<AppendRequest, AppendDone>> reqs) {
    for (auto& [req, done] : reqs) append(std::move(req), std::move(done));
  }

  // Stored messages with seq > after, oldest first, at most `limit`. A read sees
  // every append whose completion ran before the read was called; it may also see
  // later ones (callers cut at their committed seq).
  virtual void read_after(const ChannelKey& key, uint64_t after, uint32_t limit,
                          ReadDone done) = 0;
  // Stored messages with seq < before, the `limit` newest of them, oldest first.
  virtual void read_before(const ChannelKey& key, uint64_t before, uint32_t limit,
                           ReadDone done) = 0;

  // Blocks until every call submitted so far has completed, reads included
  // (drain on stop). Never on a loop thread.
  virtual void flush() = 0;
  // Number of appends submitted and not yet completed (a queue-depth metric).
  virtual size_t pending() const = 0;
  // Any thread, cheap (a scrape or /healthz calls it).
  virtual StoreHealth health() const { return {}; }

  // The log's numbering. True when the store owns seq and dedupe (a store
  // shared by several nodes, valkey): the hub appends with seq 0 and takes the
  // seq (and dup flag) of the answer; appends of one channel from several nodes
  // interleave, so a node's own answers may skip seqs other nodes took. What
  // the nodes then tell each other (the commits' feed, presence, leases) is the
  // cluster's (src/cluster/), not the log's.
  virtual bool assigns_seq() const { return false; }
};

enum class FsyncMode { kNever, kAlways };
// Where the embedded store keeps topic partitions (the channels "<topic>\x1f<p>",
// events/topic_channel.h): in RocksDB beside the channels, or in the segment log
// (store/segment/segment_log.h), a log built for appending.
enum class TopicLog { kRocksDb, kSegment };

struct EmbeddedOptions {
  std::string dir;                 // created when missing
  FsyncMode fsync = FsyncMode::kNever;  // kNever survives kill -9, kAlways power loss
  size_t max_batch = 4096;         // appends per group commit
  // A start whose recovery finds damaged data refuses (error) unless this is set;
  // then it keeps what can be read, bumps the epoch and raises every channel's seq
  // above anything that may have been acknowledged.
  bool accept_data_loss = false;
  // The writer forgets what it knows of a channel (its stored seq range) once it
  // has not written it for this long; the next append reads it back (one seek).
  int64_t channel_idle_ms = 120'000;
  // At start, the table files' checksums are verified on a reader thread,
  // newest first, up to this many bytes (0: none); damage is logged and shown
  // in health() (data_check.h).
  uint64_t verify_bytes = 256ull << 20;
  // Topic partitions in RocksDB or in dir/segments. Whichever holds them, a
  // partition's offsets continue above what the other one holds (a switch never
  // reuses an offset; history is not moved across).
  TopicLog topic_log = TopicLog::kRocksDb;
  uint64_t segment_bytes = 16ull << 20;  // the segment log seals a segment past this
  // Which channels are topic partitions (the server passes events'
  // parse_partition_channel; the store knows no topic names). Unset: none. The
  // conformance suite says every channel, to run it on the segment log.
  std::function<bool(const ChannelId&)> is_partition;
};

// A MemoryStore (memory_store.h) without a memory budget.
std::unique_ptr<Store> make_memory_store();
// Opens (or creates) the embedded store. Error when the directory is unusable, held
// by another process, or damaged (without accept_data_loss). A disk too full to open
// for writing still opens: reads work and appends are refused until space returns.
Result<std::unique_ptr<Store>> open_embedded_store(const EmbeddedOptions& opts);

}  // namespace parley::store
