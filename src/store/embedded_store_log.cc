// EmbeddedStore's part that keeps topic partitions in the segment log
// (EmbeddedOptions::topic_log, store/segment/segment_log.h).
#include <filesystem>

#include "store/embedded_store.h"
#include "store/segment/segment_log.h"

namespace parley::store {

Status EmbeddedStore::open_log() {
  const std::string dir = opts_.dir + "/segments";
  const bool wanted = opts_.topic_log == TopicLog::kSegment && opts_.is_partition;
  std::error_code ec;
  if (!wanted && !std::filesystem::exists(dir, ec)) return Status::ok();
  segment::SegmentLogOptions so;
  so.dir = dir;
  so.sync = opts_.fsync == FsyncMode::kAlways;
  so.segment_bytes = opts_.segment_bytes;
  so.idle_ms = opts_.channel_idle_ms;
  so.on_damage = [this](const std::string& part_dir, const std::string& what) {
    note_damage(std::filesystem::path(part_dir).lexically_relative(opts_.dir).string(), what);
  };
  auto log = segment::SegmentLog::open(so);
  if (!log) return log.error();
  log_ = std::move(*log);
  return Status::ok();
}

bool EmbeddedStore::in_log(const ChannelKey& key) const {
  return log_ && opts_.topic_log == TopicLog::kSegment && opts_.is_partition && opts_.is_partition(key);
}

Status EmbeddedStore::recover_from_log(const ChannelKey& key, int64_t dedupe_cutoff_ms,
                                       KeyHashFn hash, ChannelRecovery& out) {
  const bool kept_here = in_log(key);
  if (!kept_here && !(opts_.is_partition && opts_.is_partition(key))) return Status::ok();
  // A partition kept in RocksDB only asks the log what it last held (the cutoff
  // past every record reads no segment).
  auto r = log_->recover(key, kept_here ? dedupe_cutoff_ms : INT64_MAX, hash);
  if (!r) return r.error();
  out.last_seq = std::max(out.last_seq, r->last_seq);
  if (kept_here) {
    for (auto& e : r->dedupe) out.dedupe.push_back(std::move(e));
    if (out.marks.empty()) {
      out.marks.swap(r->marks);
    } else {
      out.marks.insert(out.marks.end(), r->marks.begin(), r->marks.end());
    }
  }
  return Status::ok();
}

}  // namespace parley::store
