#include "store/data_check.h"

#include <algorithm>
#include <boost/crc.hpp>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>

#include <rocksdb/convenience.h>
#include <rocksdb/db.h>
#include <rocksdb/metadata.h>
#include <rocksdb/env.h>
#include <rocksdb/options.h>
#include <rocksdb/sst_file_reader.h>
#include <rocksdb/write_batch.h>

#include "store/record_codec.h"

namespace parley::store {
namespace {

namespace fs = std::filesystem;

// Keys probed past a table's damaged block before giving up on finding its end.
constexpr int kMaxProbedKeys = 100000;

// The store's files with this extension, by number, newest first.
std::vector<fs::path> files_of(const std::string& dir, const char* ext) {
  std::vector<std::pair<uint64_t, fs::path>> numbered;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.path().extension() != ext) continue;
    numbered.emplace_back(std::strtoull(e.path().stem().c_str(), nullptr, 10), e.path());
  }
  std::sort(numbered.begin(), numbered.end(), [](auto& a, auto& b) { return a.first > b.first; });
  std::vector<fs::path> out;
  for (auto& [n, p] : numbered) out.push_back(std::move(p));
  return out;
}

void add_channel(std::vector<std::string>& out, std::string_view key) {
  std::string ch = channel_of_key(key);
  if (!ch.empty() && std::find(out.begin(), out.end(), ch) == out.end()) out.push_back(std::move(ch));
}

// The channels of a damaged table: the one whose key precedes the first
// unreadable block, and those whose keys (read without checksums) cannot be
// read with them, up to the first key that reads cleanly again.
std::vector<std::string> channels_of_damaged_table(const rocksdb::Options& options,
                                                   const std::string& path) {
  std::vector<std::string> out;
  rocksdb::SstFileReader checked(options), unchecked(options);
  if (!checked.Open(path).ok() || !unchecked.Open(path).ok()) return out;
  rocksdb::ReadOptions on;
  on.verify_checksums = true;
  rocksdb::ReadOptions off;
  off.verify_checksums = false;
  std::unique_ptr<rocksdb::Iterator> it(checked.NewIterator(on));
  std::string last_good;
  for (it->SeekToFirst(); it->Valid(); it->Next()) last_good = it->key().ToString();
  if (it->status().ok()) return out;  // every block read: the damage is elsewhere (index, footer)
  if (!last_good.empty()) add_channel(out, last_good);
  std::unique_ptr<rocksdb::Iterator> raw(unchecked.NewIterator(off));
  std::unique_ptr<rocksdb::Iterator> probe(checked.NewIterator(on));
  if (last_good.empty()) raw->SeekToFirst();
  else raw->Seek(last_good);
  for (int n = 0; raw->Valid() && n < kMaxProbedKeys; raw->Next(), ++n) {
    const std::string k = raw->key().ToString();
    if (k == last_good) continue;
    probe->Seek(k);
    if (probe->status().ok() && probe->Valid() && probe->key().ToString() == k) break;
    probe.reset(checked.NewIterator(on));  // an iterator that failed stays failed
    add_channel(out, k);
  }
  return out;
}

// RocksDB's WAL format (db/log_format.h, documented in its wiki "Write Ahead Log
// File Format"): 32 KiB blocks of records, each header a masked CRC32C (4
// bytes), a length (2), a type (1), and for recyclable types a log number (4).
// The CRC covers the header from the type on, then the payload.
constexpr size_t kBlockSize = 32768;
constexpr size_t kHeaderSize = 7;
constexpr size_t kRecyclableHeaderSize = 11;
enum RecordType : uint8_t {
  kZeroType = 0, kFullType = 1, kFirstType = 2, kMiddleType = 3, kLastType = 4,
  kRecyclableFullType = 5, kRecyclableLastType = 8,
};

uint32_t unmask(uint32_t masked) {
  const uint32_t rot = masked - 0xa282ead8u;
  return (rot >> 17) | (rot << 15);
}

uint32_t crc32c(const char* data, size_t n) {
  boost::crc_optimal<32, 0x1EDC6F41, 0xFFFFFFFF, 0xFFFFFFFF, true, true> crc;
  crc.process_bytes(data, n);
  return crc.checksum();
}

uint32_t fixed32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;  // little-endian, as the x86 and ARM machines Parley runs on
}

// The keys of one logical record (a WriteBatch); stops quietly at a malformed one.
class KeyCollector : public rocksdb::WriteBatch::Handler {
 public:
  explicit KeyCollector(std::vector<std::string>& out) : out_(out) {}
  rocksdb::Status PutCF(uint32_t, const rocksdb::Slice& k, const rocksdb::Slice&) override {
    return add(k);
  }
  rocksdb::Status DeleteCF(uint32_t, const rocksdb::Slice& k) override { return add(k); }
  rocksdb::Status SingleDeleteCF(uint32_t, const rocksdb::Slice& k) override { return add(k); }
  rocksdb::Status DeleteRangeCF(uint32_t, const rocksdb::Slice& b, const rocksdb::Slice&) override {
    return add(b);
  }
  rocksdb::Status MergeCF(uint32_t, const rocksdb::Slice& k, const rocksdb::Slice&) override {
    return add(k);
  }
  void LogData(const rocksdb::Slice&) override {}

 private:
  rocksdb::Status add(const rocksdb::Slice& k) {
    add_channel(out_, std::string_view(k.data(), k.size()));
    return rocksdb::Status::OK();
  }
  std::vector<std::string>& out_;
};

void channels_of_batch(const std::string& rep, std::vector<std::string>& out) {
  if (rep.size() < 12) return;  // a WriteBatch starts with its seq (8) and count (4)
  rocksdb::WriteBatch batch(rep);
  KeyCollector keys(out);
  (void)batch.Iterate(&keys);
}

// `from_start`: every record's channels, as if the damage came before them (a
// WAL after the damaged one, which a point-in-time recovery drops whole).
void check_wal(const fs::path& path, CheckResult& result, bool from_start = false) {
  std::ifstream in(path, std::ios::binary);
  const std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ++result.files_checked;
  result.bytes_checked += data.size();
  std::optional<DamagedFile> damage;
  std::string logical;
  size_t pos = 0;
  auto damaged = [&](const std::string& what) {
    if (!damage) damage = DamagedFile{path.filename().string(), what, {}};
  };
  if (from_start) damaged("after a damaged record");
  while (pos < data.size()) {
    const size_t left_in_block = kBlockSize - pos % kBlockSize;
    if (left_in_block < kHeaderSize) {
      pos += left_in_block;  // the block's trailer: zero padding
      continue;
    }
    if (data.size() - pos < kHeaderSize) {
      result.torn_tails.push_back(path.filename().string());
      break;
    }
    const char* h = data.data() + pos;
    const uint32_t stored = unmask(fixed32(h));
    const size_t len = static_cast<uint8_t>(h[4]) | (static_cast<size_t>(static_cast<uint8_t>(h[5])) << 8);
    const auto type = static_cast<uint8_t>(h[6]);
    if (type == kZeroType && len == 0) break;  // preallocated space: the end of what was written
    const bool recyclable = type >= kRecyclableFullType && type <= kRecyclableLastType;
    const size_t header = recyclable ? kRecyclableHeaderSize : kHeaderSize;
    if (header + len > left_in_block) {
      if (pos + header + len > data.size() && data.size() - pos <= left_in_block) {
        result.torn_tails.push_back(path.filename().string());
        break;
      }
      damaged("a record at offset " + std::to_string(pos) + " has a length past its block");
      pos += left_in_block;
      logical.clear();
      continue;
    }
    if (pos + header + len > data.size()) {
      result.torn_tails.push_back(path.filename().string());
      break;
    }
    const char* payload = h + header;
    const bool ok = crc32c(h + 6, header - 6 + len) == stored;
    const uint8_t base = recyclable ? static_cast<uint8_t>(type - 4) : type;
    if (!ok) {
      damaged("checksum mismatch in the record at offset " + std::to_string(pos));
      // Its keys are likely intact (a flipped byte in a message body): name them.
      std::string rep = base == kFullType ? std::string(payload, len) : logical + std::string(payload, len);
      channels_of_batch(rep, damage->channels);
      logical.clear();
    } else if (base == kFullType) {
      if (damage) channels_of_batch(std::string(payload, len), damage->channels);
      logical.clear();
    } else if (base == kFirstType) {
      logical.assign(payload, len);
    } else if (base == kMiddleType) {
      logical.append(payload, len);
    } else if (base == kLastType) {
      logical.append(payload, len);
      if (damage) channels_of_batch(logical, damage->channels);
      logical.clear();
    }
    pos += header + len;
  }
  if (damage) result.damaged.push_back(std::move(*damage));
}

}  // namespace

std::string channel_of_key(std::string_view key) {
  if (key.size() < 3 || (key[0] != kMessageTag && !is_dedupe_tag(key[0]))) return {};
  const auto t_end = key.find('\0', 1);
  if (t_end == std::string_view::npos) return {};
  const auto c_end = key.find('\0', t_end + 1);
  if (c_end == std::string_view::npos) return {};
  std::string out(key.substr(1, t_end - 1));
  out += '/';
  out += key.substr(t_end + 1, c_end - t_end - 1);
  return out;
}

std::vector<std::string> table_names(const std::vector<rocksdb::LiveFileMetaData>& files) {
  std::vector<std::string> out;
  for (const auto& f : files) {
    // RocksDB names them "/000012.sst" (relative to db_path).
    out.push_back(fs::path(f.name).filename().string());
  }
  return out;
}

std::optional<std::vector<std::string>> live_tables(const std::string& dir) {
  rocksdb::Options o;
  // Replays (in memory) what it can of the WALs: the live tables come from the
  // MANIFEST, whatever a WAL holds.
  o.wal_recovery_mode = rocksdb::WALRecoveryMode::kPointInTimeRecovery;
  o.info_log_level = rocksdb::InfoLogLevel::HEADER_LEVEL;
  // A look at the MANIFEST only: no table opened (a damaged one must not fail
  // the look; checking it is the caller's job), no check that each exists.
  o.max_open_files = 16;
  o.paranoid_checks = false;
  rocksdb::DB* raw = nullptr;
  if (!rocksdb::DB::OpenForReadOnly(o, dir, &raw).ok()) return std::nullopt;
  std::unique_ptr<rocksdb::DB> db(raw);
  std::vector<rocksdb::LiveFileMetaData> files;
  db->GetLiveFilesMetaData(&files);
  return table_names(files);
}

CheckResult check_tables(const std::string& dir, const rocksdb::Options& options,
                         uint64_t budget_bytes, const std::vector<std::string>* live) {
  CheckResult result;
  const rocksdb::EnvOptions env_options(options);
  for (const auto& path : files_of(dir, ".sst")) {
    if (live && std::find(live->begin(), live->end(), path.filename().string()) == live->end()) {
      continue;
    }
    std::error_code ec;
    const uint64_t size = fs::file_size(path, ec);
    if (ec) continue;  // deleted by a compaction since it was listed
    if (result.bytes_checked + size > budget_bytes) {
      ++result.files_skipped;
      continue;
    }
    result.bytes_checked += size;
    ++result.files_checked;
    rocksdb::ReadOptions ro;
    ro.verify_checksums = true;
    ro.fill_cache = false;
    const rocksdb::Status s = rocksdb::VerifySstFileChecksum(options, env_options, ro, path.string());
    if (s.ok() || s.IsNotFound() || s.IsPathNotFound()) continue;
    if (!fs::exists(path)) continue;
    result.damaged.push_back(
        {path.filename().string(), s.ToString(), channels_of_damaged_table(options, path.string())});
  }
  return result;
}

CheckResult check_wals(const std::string& dir) {
  CheckResult result;
  for (const auto& path : files_of(dir, ".log")) check_wal(path, result);
  return result;
}

WalLoss wal_loss(const std::string& dir) {
  WalLoss loss;
  auto files = files_of(dir, ".log");
  std::reverse(files.begin(), files.end());  // oldest first: the order of replay
  for (const auto& path : files) {
    CheckResult r;
    check_wal(path, r, loss.found);
    if (r.damaged.empty()) continue;
    if (!loss.found) {
      loss.found = true;
      loss.file = r.damaged.front().file;
      loss.what = r.damaged.front().what;
    }
    loss.files.push_back(path.filename().string());
    for (auto& ch : r.damaged.front().channels) {
      if (std::find(loss.channels.begin(), loss.channels.end(), ch) == loss.channels.end()) {
        loss.channels.push_back(std::move(ch));
      }
    }
  }
  return loss;
}

}  // namespace parley::store
