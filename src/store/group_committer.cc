#include "store/group_committer.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cassert>
#include <ctime>
#include <memory>
#include <utility>

#include <rocksdb/db.h>
#include <rocksdb/perf_level.h>
#include <rocksdb/write_batch.h>
#include <spdlog/spdlog.h>

#include "common/clock.h"
#include "runtime/loop_tail.h"
#include "store/blocking_check.h"
#include "store/record_codec.h"
#include "store/segment/segment_log.h"
#include "store/store_policy.h"

namespace parley::store {

namespace {
int64_t steady_ms() { return steady_ns() / 1'000'000; }

// A reused buffer above this is given back after its group commit.
constexpr size_t kKeepBatchBytes = 64 * 1024;
constexpr size_t kKeepBatchEntries = 256;

uint32_t* futex_word(std::atomic<uint32_t>& w) {
  static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t) &&
                std::atomic<uint32_t>::is_always_lock_free);
  return reinterpret_cast<uint32_t*>(&w);
}

// Sleeps while `w` holds `expected`, for at most timeout_ms (< 0: no limit).
// Returns at once if it does not hold it; may return early (spuriously).
void futex_wait(std::atomic<uint32_t>& w, uint32_t expected, int64_t timeout_ms) {
  timespec ts{};
  if (timeout_ms >= 0) {
    ts.tv_sec = static_cast<time_t>(timeout_ms / 1000);
    ts.tv_nsec = static_cast<long>(timeout_ms % 1000) * 1'000'000;
  }
  ::syscall(SYS_futex, futex_word(w), FUTEX_WAIT_PRIVATE, expected,
            timeout_ms >= 0 ? &ts : nullptr, nullptr, 0);
}

void futex_wake_one(std::atomic<uint32_t>& w) {
  ::syscall(SYS_futex, futex_word(w), FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
}
}  // namespace

GroupCommitter::GroupCommitter(Hooks hooks, FsyncMode fsync, size_t max_batch,
                               std::optional<Refusal> refusing, int64_t channel_idle_ms)
    : hooks_(std::move(hooks)),
      sync_(fsync == FsyncMode::kAlways),
      max_batch_(std::max<size_t>(max_batch, 1)),
      failed_(refusing ? std::optional<Error>(refusal_error(refusing->reason)) : std::nullopt),
      next_recover_ms_(steady_ms() + kRetryMs),
      channel_idle_ms_(std::max<int64_t>(channel_idle_ms, 1)),
      refusal_(std::move(refusing)),
      wb_(std::make_unique<rocksdb::WriteBatch>()),
      writer_([this] { run(); }) {}

GroupCommitter::~GroupCommitter() {
  bool wake = false;
  {
    std::lock_guard lock(mu_);
    stop_ = true;
    wake = take_sleeper();
  }
  if (wake) ring();
  writer_.join();  // run() returns only once the queue is empty
}

bool GroupCommitter::take_sleeper() {
  // While the writer is busy it picks the queue up on its next round anyway:
  // skipping the wake saves a futex call per append under load. Only the first
  // waker after the writer went to sleep rings.
  if (!writer_waiting_) return false;
  writer_waiting_ = false;
  bell_.store(1, std::memory_order_relaxed);
  return true;
}

void GroupCommitter::ring() { futex_wake_one(bell_); }

void GroupCommitter::wait_for_work(std::unique_lock<std::mutex>& lock, int64_t timeout_ms) {
  const int64_t deadline = timeout_ms >= 0 ? steady_ms() + timeout_ms : 0;
  while (queue_.empty() && !stop_) {
    int64_t left = -1;
    if (timeout_ms >= 0) {
      left = deadline - steady_ms();
      if (left <= 0) return;
    }
    writer_waiting_ = true;
    bell_.store(0, std::memory_order_relaxed);
    lock.unlock();
    futex_wait(bell_, 0, left);
    lock.lock();
    writer_waiting_ = false;
  }
}

void GroupCommitter::submit(AppendRequest req, AppendDone done) {
  bool wake = false;
  {
    std::lock_guard lock(mu_);
    queue_.push_back(Pending{std::move(req), std::move(done), Status::ok()});
    ++submitted_;
    wake = take_sleeper();
  }
  if (wake) ring();
}

void GroupCommitter::submit_many(std::vector<std::pair<AppendRequest, AppendDone>> reqs) {
  if (reqs.empty()) return;
  bool wake = false;
  {
    std::lock_guard lock(mu_);
    for (auto& [req, done] : reqs) {
      queue_.push_back(Pending{std::move(req), std::move(done), Status::ok()});
    }
    submitted_ += reqs.size();
    wake = take_sleeper();
  }
  if (wake) ring();
}

void GroupCommitter::flush() {
  assert(std::this_thread::get_id() != writer_.get_id());
  std::unique_lock lock(mu_);
  uint64_t target = submitted_;
  ++flush_waiters_;
  drained_cv_.wait(lock, [&] { return completed_ >= target; });
  --flush_waiters_;
}

size_t GroupCommitter::pending() const {
  std::lock_guard lock(mu_);
  return static_cast<size_t>(submitted_ - completed_);
}

std::optional<Refusal> GroupCommitter::refusal() const {
  std::lock_guard lock(refusal_mu_);
  return refusal_;
}

void GroupCommitter::refuse(const std::string& what, const std::string& text) {
  Refusal r{refusal_reason(text), what + ": " + text, wall_ms()};
  spdlog::error("store: {}; appends are refused ({}) until the store recovers, retried every {} ms",
                r.detail, r.reason, kRetryMs);
  failed_ = refusal_error(r.reason);
  next_recover_ms_ = steady_ms() + kRetryMs;
  std::lock_guard lock(refusal_mu_);
  refusal_ = std::move(r);
}

void GroupCommitter::maybe_recover() {
  if (!failed_ || steady_ms() < next_recover_ms_) return;
  next_recover_ms_ = steady_ms() + kRetryMs;
  Status s = hooks_.try_recover ? hooks_.try_recover() : Status(*failed_);
  if (!s) return;
  // The log reads each partition back (its torn tail cut) before writing it again.
  if (hooks_.log != nullptr) {
    if (Status r = hooks_.log->reset(); !r) return;
  }
  // What the failed batch left is unknown until read again.
  channels_.clear();
  tracked_.store(0, std::memory_order_relaxed);
  failed_.reset();
  std::optional<Refusal> was;
  {
    std::lock_guard lock(refusal_mu_);
    was.swap(refusal_);
  }
  spdlog::warn("store: writable again after {} s ({} before)",
               was ? (wall_ms() - was->since_ms) / 1000 : 0, was ? was->reason : "refusing");
}

void GroupCommitter::run() {
  // RocksDB counts into its thread-local perf context at the default level: the
  // writer never reads it.
  rocksdb::SetPerfLevel(rocksdb::PerfLevel::kDisable);
  size_t finished = 0;  // completed last round, counted under the next round's lock
  for (;;) {
    {
      std::unique_lock lock(mu_);
      if (finished > 0) {
        completed_ += finished;
        finished = 0;
        if (flush_waiters_ > 0) drained_cv_.notify_all();
      }
      if (queue_.empty() && !stop_) {
        // Refusing: wake for recovery attempts as well as for work. Channels held:
        // wake up to forget idle ones even when nothing is written any more.
        wait_for_work(lock, failed_              ? kRetryMs / 4
                            : !channels_.empty() ? channel_idle_ms_ / 2 + 1
                                                 : -1);
      }
      now_ms_ = steady_ms();
      if (queue_.empty() && stop_) return;  // stopping, and everything has completed
      if (queue_.empty()) {
        lock.unlock();
        maybe_recover();
        evict_idle(now_ms_);
        continue;
      }
      size_t n = std::min(queue_.size(), max_batch_);
      batch_.reserve(n);
      for (size_t i = 0; i < n; ++i) {
        batch_.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
    }
    maybe_recover();
    commit(batch_);
    evict_idle(now_ms_);
    {
      // What the callbacks hand to the loops is posted once they all ran
      // (runtime/inbox.h): one wake-up per loop for the round.
      runtime::TailScope round;
      for (Pending& p : batch_) {
        if (!p.done) continue;
        if (p.status) {
          p.done(Appended{p.req.msg.seq, false});
        } else {
          p.done(AppendOutcome{p.status.error()});
        }
      }
    }
    finished = batch_.size();
    batch_.clear();  // frees the bodies before the next wait
    if (batch_.capacity() > kKeepBatchEntries) batch_.shrink_to_fit();
  }
}

void GroupCommitter::commit(std::vector<Pending>& batch) {
  check_may_block();
  if (!failed_) {
    rocksdb::WriteBatch& wb = *wb_;
    wb.Clear();
    bool ok = true;
    for (Pending& p : batch) {
      if (!add(p, wb)) {
        ok = false;
        break;
      }
    }
    segment::SegmentLog* log = hooks_.log;
    if (ok && (wb.Count() > 0 || (log != nullptr && log->has_staged()))) {
      uint64_t max_seq = 0;
      for (const Pending& p : batch) max_seq = std::max(max_seq, p.req.msg.seq);
      // The ceiling is on disk before any seq above it can be: whatever RocksDB
      // loses later, no acknowledged seq can be above it.
      Status reserved = hooks_.reserve ? hooks_.reserve(max_seq) : Status::ok();
      if (!reserved) {
        refuse("cannot raise the seq ceiling", reserved.error().msg);
      } else {
        rocksdb::WriteOptions wo;
        wo.sync = sync_;
        // The WAL stays on (disableWAL = false): with sync = false RocksDB still hands
        // the WAL record to the OS before Write() returns (manual_wal_flush is off),
        // so an acknowledged append survives kill -9 of the process. A failed write
        // stops the database (paranoid_checks) before it touches the WAL again.
        if (wb.Count() > 0) {
          rocksdb::Status s = hooks_.db()->Write(wo, &wb);
          if (!s.ok()) refuse("store write failed", s.ToString());
        }
        if (!failed_ && log != nullptr && log->has_staged()) {
          if (Status s = log->commit(now_ms_); !s) refuse("segment log write failed", s.error().msg);
        }
      }
    }
    if (log != nullptr) log->discard();  // what a failed batch staged
    if (wb.GetDataSize() > kKeepBatchBytes) wb_ = std::make_unique<rocksdb::WriteBatch>();
  }
  if (failed_) {
    for (Pending& p : batch) p.status = *failed_;
  }
}

bool GroupCommitter::add(Pending& p, rocksdb::WriteBatch& wb) {
  if (hooks_.log != nullptr && hooks_.in_log(p.req.key)) {
    Status why;
    switch (hooks_.log->stage(p.req, now_ms_, why)) {
      case segment::SegmentLog::Staged::kOk:
        return true;
      case segment::SegmentLog::Staged::kRejected:
        p.status = std::move(why);
        return true;
      case segment::SegmentLog::Staged::kFailed:
        refuse("segment log failed", why.error().msg);
        return false;
    }
  }
  const StoredMessage& msg = p.req.msg;
  std::string& key = key_buf_;
  assign_channel_prefix(key, kMessageTag, p.req.key);
  ChannelState* ch = channel_state(key);
  if (ch == nullptr) return false;
  if (msg.seq <= ch->last_seq) {
    p.status = Error{ErrorCode::kInternal, std::string(kStaleSeqMessage)};
    return true;
  }
  const size_t prefix_len = key.size();
  append_seq(key, msg.seq);
  encode_message_value(msg, value_buf_);
  rocksdb::Status s = wb.Put(key, value_buf_);
  // A moderation event rewrites its target's record in the same batch (history
  // reads the current version); a target trimmed meanwhile stays gone.
  if (s.ok() && p.req.amended && p.req.amended->seq >= ch->oldest_seq &&
      p.req.amended->seq < msg.seq && ch->oldest_seq != 0) {
    std::string akey = key.substr(0, prefix_len);
    append_seq(akey, p.req.amended->seq);
    encode_message_value(*p.req.amended, value_buf_);
    s = wb.Put(akey, value_buf_);
  }

  // The dedupe entry rides in the same batch: message and entry land atomically.
  if (s.ok() && !msg.id.empty()) {
    assign_dedupe_record_key(dkey_buf_, p.req.key, msg.seq, msg.from, msg.id);
    DedupeValue dv{msg.seq, msg.ts_ms, msg.ts_ms + int64_t{p.req.dedupe_window_s} * 1000};
    encode_dedupe_value(dv, value_buf_);
    s = wb.Put(dkey_buf_, value_buf_);
  }

  if (ch->oldest_seq == 0) {
    ch->oldest_seq = msg.seq;
  } else if (s.ok() && msg.seq > ch->last_seq + 1) {
    // A jump (the hub continues above the store's seq ceiling after a loss): the
    // skipped seqs are recorded, in this message's batch, so that retention does
    // not count them (record_codec.h "gap").
    const ChannelState::Gap gap{ch->last_seq + 1, msg.seq - 1};
    std::string gkey = key.substr(0, prefix_len);
    gkey[0] = kGapTag;
    append_seq(gkey, gap.first);
    std::string gval;
    encode_gap_value(gap.last, gval);
    s = wb.Put(gkey, gval);
    ch->gaps.push_back(gap);
    ch->gap_seqs += gap.last - gap.first + 1;
  }
  ch->last_seq = msg.seq;
  ch->last_write_ms = now_ms_;
  if (s.ok()) {
    s = trim(*ch, prefix_len, history_keep(p.req.history_limit),
             history_max_held(p.req.history_limit), wb);
  }
  if (!s.ok()) {
    refuse("cannot build a write batch", s.ToString());
    return false;
  }
  return true;
}

rocksdb::Status GroupCommitter::trim(ChannelState& ch, size_t prefix_len, uint64_t keep,
                                     uint64_t max_held, rocksdb::WriteBatch& wb) {
  // Seqs are gap-free but for the recorded gaps: this is the number held.
  if (ch.last_seq - ch.oldest_seq + 1 - ch.gap_seqs <= max_held) return rocksdb::Status::OK();
  // The seq of the keep-th newest message: down from the last one, over the gaps.
  uint64_t need = keep, top = ch.last_seq;
  size_t above = ch.gaps.size();  // gaps [above, size) lie above what is dropped
  while (above > 0 && top - ch.gaps[above - 1].last < need) {
    need -= top - ch.gaps[above - 1].last;
    top = ch.gaps[above - 1].first - 1;
    --above;
  }
  const uint64_t new_oldest = top - need + 1;
  const std::string& key = key_buf_;
  // One range tombstone per trim step, in the same batch as the append. It
  // starts at the bare channel prefix (nothing is stored below oldest_seq, so
  // it deletes the same messages): a begin key without a seq is never in the
  // memtable insert-hint domain (embedded_store.cc, ChannelOfSeqKey).
  std::string begin = key.substr(0, prefix_len);
  std::string end = key.substr(0, prefix_len);
  append_seq(end, new_oldest);
  rocksdb::Status s = wb.DeleteRange(begin, end);
  // The gaps below go with the messages around them.
  for (size_t i = 0; i < above && s.ok(); ++i) {
    std::string gkey = key.substr(0, prefix_len);
    gkey[0] = kGapTag;
    append_seq(gkey, ch.gaps[i].first);
    s = wb.Delete(gkey);
    ch.gap_seqs -= ch.gaps[i].last - ch.gaps[i].first + 1;
  }
  ch.gaps.erase(ch.gaps.begin(), ch.gaps.begin() + static_cast<std::ptrdiff_t>(above));
  ch.oldest_seq = new_oldest;
  return s;
}

GroupCommitter::ChannelState* GroupCommitter::channel_state(const std::string& msg_prefix) {
  auto it = channels_.find(msg_prefix);
  if (it != channels_.end()) return &it->second;

  // First append to this channel since open: learn its stored range once.
  std::string upper = prefix_upper_bound(msg_prefix);
  rocksdb::Slice lo(msg_prefix), hi(upper);
  rocksdb::ReadOptions ro;
  ro.iterate_lower_bound = &lo;
  ro.iterate_upper_bound = &hi;
  std::unique_ptr<rocksdb::Iterator> iter(hooks_.db()->NewIterator(ro));
  ChannelState st;
  iter->SeekToFirst();
  if (iter->Valid()) {
    std::string_view k(iter->key().data(), iter->key().size());
    parse_message_seq(k, msg_prefix.size(), st.oldest_seq);
    iter->SeekToLast();
  }
  if (iter->Valid()) {
    std::string_view k(iter->key().data(), iter->key().size());
    parse_message_seq(k, msg_prefix.size(), st.last_seq);
  }
  if (!iter->status().ok()) {
    refuse("store read failed", iter->status().ToString());
    return nullptr;
  }
  if (st.oldest_seq != 0) {
    // Its gaps (usually none: one seek).
    std::string gprefix = msg_prefix;
    gprefix[0] = kGapTag;
    std::string gupper = prefix_upper_bound(gprefix);
    rocksdb::Slice glo(gprefix), ghi(gupper);
    rocksdb::ReadOptions gro;
    gro.iterate_lower_bound = &glo;
    gro.iterate_upper_bound = &ghi;
    std::unique_ptr<rocksdb::Iterator> gaps(hooks_.db()->NewIterator(gro));
    for (gaps->SeekToFirst(); gaps->Valid(); gaps->Next()) {
      ChannelState::Gap g{};
      std::string_view k(gaps->key().data(), gaps->key().size());
      std::string_view v(gaps->value().data(), gaps->value().size());
      // Only gaps strictly inside the stored range count (a malformed one counts
      // as messages: retention then keeps fewer, never more than it says).
      if (parse_message_seq(k, gprefix.size(), g.first) && decode_gap_value(v, g.last) &&
          g.first > st.oldest_seq && g.first <= g.last && g.last < st.last_seq) {
        st.gaps.push_back(g);
        st.gap_seqs += g.last - g.first + 1;
      }
    }
    if (!gaps->status().ok()) {
      refuse("store read failed", gaps->status().ToString());
      return nullptr;
    }
  }
  tracked_.store(channels_.size() + 1, std::memory_order_relaxed);
  return &channels_.emplace(msg_prefix, st).first->second;
}

void GroupCommitter::evict_idle(int64_t now_ms) {
  if (now_ms < next_evict_ms_) return;
  next_evict_ms_ = now_ms + channel_idle_ms_ / 2;
  std::erase_if(channels_, [&](const auto& kv) {
    return now_ms - kv.second.last_write_ms > channel_idle_ms_;
  });
  // The bucket array does not shrink by itself.
  if (channels_.bucket_count() > 64 && channels_.size() * 8 < channels_.bucket_count()) {
    channels_.rehash(0);
  }
  tracked_.store(channels_.size(), std::memory_order_relaxed);
}

}  // namespace parley::store
