// What the bench knows about one channel and one membership, and the checks that
// turn it into loss / duplicate / reorder counts.
//
// Thread: channels are partitioned over workers (and processes) so that every
// member of a channel lives on the worker that owns the channel; all of this is
// touched by that worker's thread only, with no locks.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace bench {

class Connection;

struct ChannelState {
  std::string name;
  bool base_set = false;
  uint64_t base = 0;              // seq before the run's first message (first joined)
  std::vector<uint64_t> acked;    // client id by (seq - base - 1); 0 = not acked
  std::vector<uint64_t> seen;     // client id as first delivered, same index
  uint64_t max_acked = 0;
  uint64_t max_seen = 0;
  std::vector<Connection*> members;
  // History audit progress.
  uint64_t hist_after = 0;        // next page starts after this seq
  uint64_t hist_page_max = 0;
  uint64_t hist_page_count = 0;
  bool hist_done = true;
  uint64_t hist_start = 0;        // checked range is (hist_start, final_seq()]
  uint64_t hist_checked = 0, hist_mismatch = 0;
  Connection* hist_conn = nullptr;
  // Acked seqs the server gave to another id too (a second ack, a delivery or
  // the history entry at that seq): the acked message is lost, whatever else the
  // audit counts (issue 30: a failover reused seqs and the report said lost 0).
  // Empty on a healthy run.
  std::set<uint64_t> reused;

  void note_join(uint64_t seq) {
    if (!base_set) {
      base_set = true;
      base = seq;
    }
  }
  // Returns the slot for seq, growing the tables; nullptr when seq is below base.
  uint64_t* slot(std::vector<uint64_t>& table, uint64_t seq) {
    if (!base_set || seq <= base) return nullptr;
    uint64_t i = seq - base - 1;
    if (i >= table.size()) table.resize(std::max<uint64_t>(i + 1, table.size() * 2), 0);
    return &table[i];
  }
  // Publisher side: an ack arrived. Returns false when the seq already carried
  // another id (the server gave two messages one seq).
  bool record_ack(uint64_t seq, uint64_t id) {
    uint64_t* s = slot(acked, seq);
    if (!s) return true;
    if (seq > max_acked) max_acked = seq;
    if (*s && *s != id) {
      reused.insert(seq);
      return false;
    }
    *s = id;
    return true;
  }
  // Receiver side: the first delivery of seq fixes its id; a later one with another
  // id is a mismatch.
  bool record_seen(uint64_t seq, uint64_t id) {
    uint64_t* s = slot(seen, seq);
    if (!s) return true;
    if (seq > max_seen) max_seen = seq;
    if (*s && *s != id) return false;
    *s = id;
    return true;
  }
  uint64_t acked_id(uint64_t seq) const {
    if (!base_set || seq <= base || seq - base - 1 >= acked.size()) return 0;
    return acked[seq - base - 1];
  }
  uint64_t seen_id(uint64_t seq) const {
    if (!base_set || seq <= base || seq - base - 1 >= seen.size()) return 0;
    return seen[seq - base - 1];
  }
  uint64_t final_seq() const { return max_acked > max_seen ? max_acked : max_seen; }
};

// One connection's membership of one channel: the seq stream it has received.
struct Membership {
  enum class St : uint8_t { kNone, kJoining, kJoined, kLeaving, kRejoining };
  uint32_t chan = 0;     // worker-local channel index
  St st = St::kNone;
  bool stayed = true;    // joined since the start of this segment without a break
  uint64_t join_seq = 0;
  uint64_t last_seq = 0;
  uint64_t skip_until = 0;  // after an unrecovered rejoin: seqs the server may no longer hold
  std::vector<uint64_t> missing;  // seqs skipped so far; empty on a healthy run

  enum class Verdict : uint8_t { kInOrder, kGap, kReordered, kDuplicate };
  // Applies a received seq. kGap adds the skipped seqs to `missing`.
  Verdict receive(uint64_t seq);
};

struct AuditResult {
  uint64_t lost = 0, duplicates = 0, reorders = 0, mismatches = 0;
  uint64_t members_checked = 0, channels_checked = 0, acked_msgs = 0;
  uint64_t expected_deliveries = 0;
};

}  // namespace bench
