#include "store/valkey/partition_map.h"

#include "common/fnv1a.h"

namespace parley::store::valkey {

uint32_t partition_of(const ChannelId& id, uint32_t partitions) {
  const uint64_t h = fnv1a_64(id.key(), kParleyPlacementSeed);
  return partitions == 0 ? 0 : static_cast<uint32_t>(h % partitions);
}

std::string hash_tag(std::string_view tenant, uint32_t partition) {
  std::string t = "{";
  t.append(tenant).append(".p").append(std::to_string(partition)).push_back('}');
  return t;
}

ChannelKeys channel_keys(const ChannelId& id, uint32_t partitions) {
  ChannelKeys k;
  k.tag = hash_tag(id.tenant, partition_of(id, partitions));
  k.seq = k.tag + ":s:" + id.channel;
  k.history = k.tag + ":h:" + id.channel;
  k.dedupe = k.tag + ":d:" + id.channel;
  k.dedupe_by_time = k.tag + ":z:" + id.channel;
  k.wal = k.tag + ":w";
  k.feed = k.tag + ":f";
  k.members = k.tag + ":m:" + id.channel;
  k.holder = k.tag + ":o:" + id.channel;
  k.epoch = k.tag + ":e:" + id.channel;
  k.amends = k.tag + ":a:" + id.channel;
  return k;
}

namespace {
// CRC-16/XMODEM (polynomial 0x1021, initial 0), the checksum Redis Cluster uses.
uint16_t crc16(std::string_view s) {
  uint16_t crc = 0;
  for (unsigned char c : s) {
    crc ^= static_cast<uint16_t>(c) << 8;
    for (int i = 0; i < 8; ++i) {
      crc = (crc & 0x8000) ? static_cast<uint16_t>((crc << 1) ^ 0x1021) : static_cast<uint16_t>(crc << 1);
    }
  }
  return crc;
}
}  // namespace

uint16_t key_slot(std::string_view key) {
  const size_t open = key.find('{');
  if (open != std::string_view::npos) {
    const size_t close = key.find('}', open + 1);
    if (close != std::string_view::npos && close > open + 1) {
      key = key.substr(open + 1, close - open - 1);
    }
  }
  return crc16(key) & 16383;
}

}  // namespace parley::store::valkey
