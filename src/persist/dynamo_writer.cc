#include "persist/dynamo_writer.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "common/clock.h"
#include "persist/persister.h"

namespace parley::persist {

namespace {
constexpr size_t kMaxBatchItems = 25;  // BatchWriteItem's limit
constexpr uint32_t kBaseBackoffMs = 50;
constexpr uint32_t kMaxBackoffMs = 5000;
constexpr uint32_t kMaxPaceMs = 1000;
}  // namespace

DynamoWriter::DynamoWriter(store::dynamodb::DynamoOptions resolved, PersisterStats& stats,
                           std::function<bool(uint32_t)> wait)
    : client_(std::move(resolved)), stats_(stats), wait_(std::move(wait)),
      rng_(static_cast<uint32_t>(steady_ns())) {}

uint32_t DynamoWriter::backoff_ms(uint32_t attempt) {
  const uint32_t cap = std::min<uint64_t>(kMaxBackoffMs, uint64_t{kBaseBackoffMs} << std::min(attempt, 16u));
  return std::uniform_int_distribution<uint32_t>(0, cap)(rng_);
}

bool DynamoWriter::pass(std::vector<const ArchiveRow*>& left) {
  bool throttled = false;
  std::vector<const ArchiveRow*> still;
  for (size_t at = 0; at < left.size(); at += kMaxBatchItems) {
    std::vector<const ArchiveRow*> chunk(left.begin() + at, left.begin() + std::min(left.size(), at + kMaxBatchItems));
    if (pace_ms_ > 0 && !wait_(pace_ms_)) {
      still.insert(still.end(), left.begin() + at, left.end());
      break;
    }
    const int64_t t0 = steady_ns();
    auto r = client_.batch_write(chunk);
    const int64_t now = wall_ms();
    auto log = [&](const std::string& what) {
      if (now - last_log_ms_ < 5000) return;
      last_log_ms_ = now;
      spdlog::warn("persister: dynamodb: {} items not written, retrying: {}", chunk.size(), what);
    };
    if (!r || r->refused) {
      still.insert(still.end(), chunk.begin(), chunk.end());
      if (r && r->refused->throttled()) {
        throttled = true;
        stats_.dynamo_throttles.fetch_add(1, std::memory_order_relaxed);
        pace_ms_ = std::clamp<uint32_t>(pace_ms_ * 2, 10, kMaxPaceMs);
        log(r->refused->type);
      } else {
        stats_.dynamo_errors.fetch_add(1, std::memory_order_relaxed);
        stats_.dynamo_up.store(false, std::memory_order_relaxed);
        log(r ? r->refused->type + ": " + r->refused->message : r.error().msg);
        if (r && r->refused->type == "ResourceNotFoundException") table_ready_ = false;
      }
      continue;
    }
    stats_.dynamo_write_seconds.observe_ns(steady_ns() - t0);
    stats_.dynamo_requests.fetch_add(1, std::memory_order_relaxed);
    stats_.dynamo_up.store(true, std::memory_order_relaxed);
    stats_.dynamo_items_written.fetch_add(chunk.size() - r->unprocessed.size(), std::memory_order_relaxed);
    if (!r->unprocessed.empty()) {
      stats_.dynamo_unprocessed.fetch_add(r->unprocessed.size(), std::memory_order_relaxed);
      for (size_t i : r->unprocessed) still.push_back(chunk[i]);
    } else {
      pace_ms_ /= 2;
    }
  }
  left = std::move(still);
  return throttled;
}

bool DynamoWriter::write(const std::vector<const ArchiveRow*>& rows, const std::function<void()>& between) {
  std::vector<const ArchiveRow*> left = rows;
  for (uint32_t attempt = 0;; ++attempt) {
    if (!table_ready_) {
      if (Status s = client_.ensure_table(); s) {
        table_ready_ = true;
      } else {
        stats_.dynamo_errors.fetch_add(1, std::memory_order_relaxed);
        stats_.dynamo_up.store(false, std::memory_order_relaxed);
        const int64_t now = wall_ms();
        if (now - last_log_ms_ >= 5000) {
          last_log_ms_ = now;
          spdlog::warn("persister: dynamodb: {}", s.error().msg);
        }
      }
    }
    if (table_ready_) pass(left);
    if (left.empty()) return true;
    stats_.dynamo_retries.fetch_add(1, std::memory_order_relaxed);
    between();
    if (!wait_(backoff_ms(attempt))) return false;
  }
}

}  // namespace parley::persist
