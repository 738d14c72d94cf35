// A topic's key hash (key_hash.h): read once per topic life on its loop, after
// its partitions are recovered; written by the topic's first start.
//
// On a store shared by several nodes two nodes may start a new topic at once;
// each decides from what its partitions held before it read the record, and a
// node writes its first event only after the record, so both decide alike, and
// both read back the first record written, which is the one that counts.
#include <spdlog/spdlog.h>

#include <memory>

#include "common/clock.h"
#include "events/topic.h"

namespace parley::events {

void Topic::load_key_hash(bool written) {
  hash_loading_ = true;
  store_.recover(hash_id_, wall_ms(), [this, written](Result<store::ChannelRecovery> rec) {
    loops_.run_on(loop_, [this, written, rec = std::move(rec)]() mutable {
      if (!rec) {
        spdlog::warn("events: {}/{}: key hash unreadable: {}", tenant_.id, name_, rec.error().msg);
        return key_hash_loaded(std::nullopt);
      }
      const uint64_t last = rec->last_seq;
      if (last == 0 && !written) return decide_key_hash(0);
      // After a start that accepted data loss last_seq may be the store's floor
      // with no record under it: then the topic decides as a new one would.
      store_.read_after(hash_id_, 0, 1, [this, last, written](auto r) {
        loops_.run_on(loop_, [this, last, written, r = std::move(r)]() mutable {
          if (!r) return key_hash_loaded(std::nullopt);
          if (r->empty() && !written) return decide_key_hash(last);
          if (r->empty()) {
            spdlog::warn("events: {}/{}: the key hash record written is not read back", tenant_.id,
                         name_);
            return key_hash_loaded(std::nullopt);
          }
          const auto h = parse_key_hash_record(r->front().body);
          if (!h) {
            spdlog::error("events: {}/{}: unknown key hash record {}: the topic stays unavailable",
                          tenant_.id, name_, r->front().body.substr(0, 64));
          }
          key_hash_loaded(h);
        });
      });
    });
  });
}

void Topic::decide_key_hash(uint64_t record_seq) {
  // No record: a topic that holds events was created by a server that
  // partitioned with the old basis; one that holds none is new.
  std::vector<uint32_t> written;
  for (uint32_t p = 0; p < partitions(); ++p) {
    if (parts_[p]->committed() > 0) written.push_back(p);
  }
  if (written.empty()) return write_key_hash(KeyHash::kSpec, record_seq + 1);
  struct Probe {
    size_t left;
    bool any = false, failed = false;
  };
  auto probe = std::make_shared<Probe>(Probe{written.size()});
  for (uint32_t p : written) {
    // committed() may be a loss floor with nothing stored under it.
    store_.read_before(parts_[p]->store_id(), parts_[p]->committed() + 1, 1,
                       [this, probe, record_seq](auto r) {
      loops_.run_on(loop_, [this, probe, record_seq, r = std::move(r)]() mutable {
        if (!r) probe->failed = true;
        else if (!r->empty()) probe->any = true;
        if (--probe->left > 0) return;
        if (probe->failed) return key_hash_loaded(std::nullopt);
        write_key_hash(probe->any ? KeyHash::kLegacy : KeyHash::kSpec, record_seq + 1);
      });
    });
  }
}

void Topic::write_key_hash(KeyHash h, uint64_t seq) {
  store::AppendRequest req{hash_id_,
                           store::StoredMessage{seq, wall_ms(), "server", "", std::string(key_hash_record(h))},
                           8, 0, 0};
  store_.append(std::move(req), [this](store::AppendOutcome out) {
    loops_.run_on(loop_, [this, out = std::move(out)] {
      if (!out) {
        spdlog::warn("events: {}/{}: key hash not recorded: {}", tenant_.id, name_,
                     out.error().msg);
        return key_hash_loaded(std::nullopt);
      }
      // Read back: on a shared store another node's record may have come first.
      load_key_hash(true);
    });
  });
}

void Topic::key_hash_loaded(std::optional<KeyHash> h) {
  hash_loading_ = false;
  if (h && !key_hash_ && *h == KeyHash::kLegacy) {
    spdlog::warn("events: {}/{}: created before partitions followed PROTOCOL.md's FNV-1a basis; "
                 "its keys keep their partitions (docs/operations.md \"Event partitions of old "
                 "topics\")",
                 tenant_.id, name_);
  }
  key_hash_ = h;
  run_waiting();
}

}  // namespace parley::events
