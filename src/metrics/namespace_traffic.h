// What the fan-out sends, by namespace and by the form members receive it in
// (JSON, MessagePack, each with or without state deltas): bytes and deliveries.
//
// The tick batcher counts each slice it puts in a member's frame against its
// channel's namespace (one relaxed add per run of events, not per member per
// event); a scrape sums them. Replies, backfill and history are not in it:
// they belong to no tick (parley_bytes_out_total counts every byte).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace parley::metrics {

enum class WireForm : uint8_t { kJson, kMsgpack, kJsonDelta, kMsgpackDelta };
inline constexpr size_t kWireForms = 4;
// "json", "msgpack", "json+delta", "msgpack+delta": the `encoding` label.
std::string_view wire_form_name(WireForm f);
inline WireForm wire_form(bool msgpack, bool state_deltas) {
  if (state_deltas) return msgpack ? WireForm::kMsgpackDelta : WireForm::kJsonDelta;
  return msgpack ? WireForm::kMsgpack : WireForm::kJson;
}

struct NamespaceTraffic {
  std::array<std::atomic<uint64_t>, kWireForms> bytes{};
  std::array<std::atomic<uint64_t>, kWireForms> deliveries{};
  // Bytes net::Connection wrote to sockets (framing included, after the
  // conversion to the connection's encoding), counted as they leave: fan-out
  // frames against their channels' namespaces, any other frame (replies,
  // backfill, history) against the connection's tenant's "-".
  std::array<std::atomic<uint64_t>, kWireForms> wire{};
  void add_wire(WireForm f, uint64_t n) {
    wire[static_cast<size_t>(f)].fetch_add(n, std::memory_order_relaxed);
  }
  void add(WireForm f, uint64_t n_bytes, uint64_t n_deliveries) {
    bytes[static_cast<size_t>(f)].fetch_add(n_bytes, std::memory_order_relaxed);
    deliveries[static_cast<size_t>(f)].fetch_add(n_deliveries, std::memory_order_relaxed);
  }
};

// Owned by Metrics; entries live as long as it (a namespace's counters stay
// after its last channel goes, as counters should). Any thread.
class TrafficTable {
 public:
  // The counters of "tenant/namespace", made at first use (a mutex, taken
  // when a loop first sees a channel, never per delivery).
  NamespaceTraffic* of(std::string_view tenant, std::string_view ns);
  // Of a hub channel key (store::ChannelId::key(): "<len>:<tenant><channel>").
  NamespaceTraffic* of_channel_key(std::string_view key);

  struct Row {
    std::string ns;  // tenant/namespace
    WireForm form;
    uint64_t bytes, deliveries, wire;
  };
  // Every (namespace, form) that sent something.
  std::vector<Row> rows() const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::unique_ptr<NamespaceTraffic>, std::less<>> by_ns_;
};

}  // namespace parley::metrics
