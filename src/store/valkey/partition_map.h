// Where a channel lives in Valkey: its partition, the partition's hash tag, the
// keys under that tag, and the Cluster slot the tag hashes to.
//
// partition = FNV-1a 64 of the ChannelId's collision-free key, mod P: stable
// across nodes, restarts and builds, so every Parley node maps a channel to the
// same keys. Every key of a partition carries the hash tag `{<tenant>.p<k>}`, so
// they share one Cluster slot and one server-side script can touch them all.
//
// Pure functions; any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "store/channel_id.h"

namespace parley::store::valkey {

uint32_t partition_of(const ChannelId& id, uint32_t partitions);

// "{<tenant>.p<k>}"
std::string hash_tag(std::string_view tenant, uint32_t partition);

// The keys of one channel, all under its partition's tag.
struct ChannelKeys {
  std::string tag;      // {t.pk}
  std::string seq;      // {t.pk}:s:<channel>  the seq counter (a string integer)
  std::string history;  // {t.pk}:h:<channel>  recent history, a stream with ids <seq>-0
  std::string dedupe;   // {t.pk}:d:<channel>  hash: dedupe key -> "<seq>:<ts_ms>"
  std::string dedupe_by_time;  // {t.pk}:z:<channel>  zset: dedupe key scored by ts_ms
  std::string wal;      // {t.pk}:w  the partition's WAL stream (every channel in it)
  std::string feed;     // {t.pk}:f  the partition's feed (commits, notes); on a cluster its
                        // pub/sub channel is {t.pk}:f:<master epoch> (ValkeyStore::feed_name)
  std::string members;  // {t.pk}:m:<channel>  presence of several nodes: node+user -> expiry ms
  std::string holder;   // {t.pk}:o:<channel>  the node holding the channel (cluster::Leases::claim), with a TTL
  std::string epoch;    // {t.pk}:e:<channel>  the channel's epoch (1 until a loss raised it), from its first append on
  std::string amends;   // {t.pk}:a:<channel>  zset: "<seq>:<version>" scored by seq, the current
                        // version of each edited or deleted message ("e<edited_ms>:<body>" or "d")
};
ChannelKeys channel_keys(const ChannelId& id, uint32_t partitions);

// The Redis Cluster slot of a key: CRC16 (XMODEM) of its hash tag (the bytes
// between the first '{' and the next '}', when not empty) or of the whole key,
// mod 16384.
uint16_t key_slot(std::string_view key);

}  // namespace parley::store::valkey
