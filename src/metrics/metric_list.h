// Every metric Parley exports, declared once (Envoy-style stat macros).
//
// The rows below generate the per-thread fields of ThreadMetrics, the
// registry of declared metrics (kDeclared) and the Prometheus exposition with
// its HELP and TYPE lines; nothing else may emit a metric family. Names carry
// their unit (_seconds, _bytes, _total for counters).
#pragma once

#include <array>
#include <string_view>

// Counters kept per loop thread and summed on scrape: X(field, name, help).
#define PARLEY_THREAD_COUNTERS(X)                                                          \
  X(frames_in, "parley_frames_in_total", "Client frames received.")                        \
  X(frames_out, "parley_frames_out_total", "Frames written to clients.")                   \
  X(bytes_out, "parley_bytes_out_total", "Payload bytes written to clients.")              \
  X(deliveries, "parley_deliveries_total",                                                 \
    "Items (msg, state, presence) delivered to connections.")                              \
  X(slow_consumers, "parley_slow_consumer_disconnects_total",                              \
    "Connections closed with 4010 for exceeding max_queue_bytes.")                         \
  X(connections_opened, "parley_connections_opened_total", "Client connections accepted.") \
  X(connections_refused, "parley_connections_refused_total",                               \
    "Connections refused at hello or at an HTTP request: server.max_connections reached.") \
  X(fanout_received, "parley_fanout_received_total",                                       \
    "valkey store, several nodes: committed messages pushed by the store (sharded "        \
    "pub/sub), this node's own included.")                                                 \
  X(fanout_held, "parley_fanout_held_total",                                               \
    "Committed messages held back because an earlier seq of their channel had not "        \
    "arrived yet.")                                                                        \
  X(fanout_gap_fills, "parley_fanout_gap_fills_total",                                     \
    "Reads from the store to fill a channel's gap that outlived fanout_gap_ms (or to "     \
    "catch up after a subscription was made again).")                                     \
  X(fanout_gap_skipped, "parley_fanout_gap_skipped_total",                                 \
    "Seqs a node could not deliver because the store no longer held them (history "       \
    "trimmed before the gap was filled).")                                                 \
  X(mutes_enforced, "parley_mutes_enforced_total",                                         \
    "pub, state and up frames refused because their sender was muted.")                   \
  X(bans_enforced, "parley_bans_enforced_total",                                           \
    "joins refused because the user was banned from the channel.")                        \
  X(kicks, "parley_kicks_total",                                                           \
    "Connections this node removed from a channel by a kick or a ban.")                   \
  X(channel_rate_limited, "parley_channel_rate_limited_total",                             \
    "pubs refused rate_limited over their channel's channel_pub_rate.")                    \
  X(event_dedupe_held_overflows, "parley_event_dedupe_held_overflows_total",               \
    "Events answered backpressure because their partition already held 4096 appends "      \
    "behind a dedupe confirmation read.")                                                  \
  X(event_dedupe_confirm_timeouts, "parley_event_dedupe_confirm_timeouts_total",           \
    "Dedupe confirmation reads of a topic partition not answered within 2 s (the appends " \
    "held behind each were answered unavailable).")

// Gauges kept per loop thread (each slot may go negative; the sum may not):
// X(field, name, help).
#define PARLEY_THREAD_GAUGES(X)                                                            \
  X(queued_bytes, "parley_session_queue_bytes", "Bytes waiting in connection write queues.") \
  X(event_dedupe_held, "parley_event_dedupe_held",                                         \
    "Event appends waiting behind a dedupe confirmation read of their partition.")

// Values owned by other components and read at scrape time through a source
// (Metrics::set_source): X(id, type, name, label, help). An empty label means
// one unlabelled sample; otherwise the source gives one sample per label value.
#define PARLEY_SCRAPED(X)                                                                  \
  X(connections, kGauge, "parley_connections", "tenant",                                   \
    "Open client connections by tenant (after hello).")                                    \
  X(messages, kCounter, "parley_messages_total", "tenant",                                 \
    "Messages acknowledged (not duplicates) by tenant.")                                   \
  X(sockets, kGauge, "parley_sockets", "", "Open sockets of clients, including before hello.") \
  X(append_queue_depth, kGauge, "parley_append_queue_depth", "",                           \
    "Appends in flight in the hub shards.")                                                \
  X(store_pending, kGauge, "parley_store_pending", "", "Appends queued in the durable store.") \
  X(channels, kGauge, "parley_channels", "", "Channels loaded in the hub shards.")           \
  X(http_connections, kGauge, "parley_http_connections", "",                               \
    "HTTP connections not upgraded to WebSocket (they count against max_connections).")    \
  X(preauth_bytes, kGauge, "parley_preauth_bytes", "",                                     \
    "Bytes held in read buffers of connections before hello (server.preauth_memory_bytes).") \
  X(preauth_sockets, kGauge, "parley_preauth_sockets", "",                                 \
    "Sockets before hello or a whole HTTP request (server.preauth_max_connections).")      \
  X(preauth_shed, kCounter, "parley_preauth_shed_total", "limit",                          \
    "Unauthenticated sockets closed to admit newer ones, by the limit reached (global: "   \
    "preauth_max_connections, address: preauth_max_per_address).")                         \
  X(upstream_sent, kCounter, "parley_upstream_events_sent_total", "upstream",              \
    "Events a namespace's app server answered 2xx (upstream: tenant/namespace).")          \
  X(upstream_failed, kCounter, "parley_upstream_requests_failed_total", "upstream",        \
    "Upstream requests that got no answer or a non-2xx status.")                           \
  X(upstream_retries, kCounter, "parley_upstream_retries_total", "upstream",               \
    "Upstream requests sent again after a failure.")                                       \
  X(upstream_queued, kGauge, "parley_upstream_queued", "upstream",                         \
    "Events waiting for the app server, a request in flight included.")                    \
  X(upstream_dropped, kCounter, "parley_upstream_dropped_total", "upstream",               \
    "Events dropped, oldest first, past the namespace's upstream_queue.")                           \
  X(store_write_refused, kGauge, "parley_store_write_refused", "reason",                   \
    "1 while the durable store refuses appends, by reason.")                               \
  X(store_refusing_since, kGauge, "parley_store_refusing_since_seconds", "",               \
    "Unix time the durable store began refusing appends; 0 while it takes them.")         \
  X(store_epoch, kGauge, "parley_store_epoch", "",                                         \
    "The store's epoch: 1, plus one for each start that accepted data loss.")              \
  X(store_data_loss_accepted, kGauge, "parley_store_data_loss_accepted", "",               \
    "1 when this start dropped damaged data (accept_data_loss) or followed a machine "     \
    "stop with fsync = never.")                                                            \
  X(store_unreadable_reads, kCounter, "parley_store_unreadable_reads_total", "",           \
    "Store reads that met damaged data (each channel is also logged once).")               \
  X(store_damaged_files, kGauge, "parley_store_damaged_files", "",                         \
    "Store files found damaged since start (checksums at start, reads, compactions).")      \
  X(store_channels, kGauge, "parley_store_channels", "",                                   \
    "Channels the embedded store's writer holds state of (written in the last "            \
    "2 x channel_idle_s).")                                                                \
  X(ephemeral_channels, kGauge, "parley_ephemeral_channels", "",                           \
    "Channels the durable = false store holds.")                                           \
  X(ephemeral_memory_bytes, kGauge, "parley_ephemeral_memory_bytes", "",                   \
    "Estimate of what durable = false channels hold (history, dedupe windows, records).")  \
  X(ephemeral_evictions, kCounter, "parley_ephemeral_evictions_total", "",                 \
    "Histories of durable = false channels dropped over ephemeral_memory_bytes.")          \
  X(events, kCounter, "parley_events_total", "topic",                                      \
    "Events acknowledged (not duplicates) by topic (tenant/topic).")                       \
  X(consumer_lag, kGauge, "parley_consumer_lag_events", "group",                           \
    "A consumer group's lag per partition (tenant/topic/group/p): the partition's last "   \
    "offset minus the group's committed one.")                                            \
  X(valkey_queued, kGauge, "parley_valkey_queued", "node",                                 \
    "valkey store: commands waiting to be written to a node (connecting, or behind a write).") \
  X(valkey_in_flight, kGauge, "parley_valkey_in_flight", "node",                           \
    "valkey store: commands written to a node and not yet answered.")                      \
  X(valkey_node_down, kGauge, "parley_valkey_node_down", "node",                           \
    "valkey store: 1 while a connection to the node has failed and not answered since.")  \
  X(valkey_redirects, kCounter, "parley_valkey_redirects_total", "kind",                   \
    "valkey store: cluster answers followed by the store (kind: moved, ask, tryagain) "    \
    "while slots move.")                                                                   \
  X(valkey_partition_up, kGauge, "parley_valkey_partition_up", "partition",                \
    "valkey store: 1 while the master of the partition (<tenant>.p<k>, for tenants with a " \
    "channel loaded here) answers, 0 while it does not.")                                 \
  X(valkey_topology, kCounter, "parley_valkey_topology_total", "kind",                     \
    "valkey cluster: slot maps read (kind: read) and those that moved a slot or a master's " \
    "epoch (kind: changed), e.g. after a failover.")                                      \
  X(hook_requests, kCounter, "parley_hook_requests_total", "hook",                         \
    "Hook requests sent to the app server (hook: tenant/namespace/kind, tenant/connect).") \
  X(hook_allowed, kCounter, "parley_hook_allowed_total", "hook",                           \
    "Hook requests the app server allowed unchanged.")                                     \
  X(hook_modified, kCounter, "parley_hook_modified_total", "hook",                         \
    "Pub hook requests the app server allowed with a new body.")                           \
  X(hook_denied, kCounter, "parley_hook_denied_total", "hook",                             \
    "Hook requests the app server denied.")                                                \
  X(hook_timeouts, kCounter, "parley_hook_timeouts_total", "hook",                         \
    "Hook requests not answered within their hook_*_timeout_ms.")                          \
  X(hook_failures, kCounter, "parley_hook_failures_total", "hook",                         \
    "Hook requests that failed: app server unreachable, a non-2xx status or a bad answer.") \
  X(hook_failed_open, kCounter, "parley_hook_failed_open_total", "hook",                   \
    "Timeouts and failures allowed because the hook fails open.")                          \
  X(hook_backpressure, kCounter, "parley_hook_backpressure_total", "hook",                 \
    "Asks refused with backpressure: hook_*_max_inflight and hook_*_queue were full.")     \
  X(hook_answered, kCounter, "parley_hook_answered_total", "hook",                         \
    "Hook requests the app server answered (any status): the count of the latency sum.")  \
  X(hook_latency_us, kCounter, "parley_hook_latency_microseconds_total", "hook",           \
    "Sum of the time from ask to answer of answered hook requests, queueing included.")   \
  X(hook_inflight, kGauge, "parley_hook_inflight", "hook",                                 \
    "Hook asks waiting for a decision (on the wire or queued).")                           \
  X(hook_connects, kCounter, "parley_hook_connects_total", "hook",                         \
    "New connections to the hook's app server attempted (bounded per loop: a bucket of "   \
    "16 refilled at 32/s, paused after failed ones).")                                     \
  X(hook_connects_throttled, kCounter, "parley_hook_connects_throttled_total", "hook",     \
    "Hook calls that needed a new connection while new ones were at their bound: "         \
    "they waited for one, or failed at once while connects were paused and none was open.") \
  X(hook_late_answers, kCounter, "parley_hook_late_answers_total", "hook",                 \
    "Answers read after their call's deadline (the client already had its outcome): "      \
    "dropped, the connection kept.")                                                       \
  X(hook_late_closed, kCounter, "parley_hook_late_closed_total", "hook",                   \
    "Connections closed because a timed-out call's answer did not come within the grace "  \
    "(10 x timeout_ms, 1..60 s) or came broken.")                                          \
  X(hook_connections, kGauge, "parley_hook_connections", "hook",                           \
    "Connections open to the hook's app server (connecting, carrying a request or idle).") \
  X(mutes_active, kGauge, "parley_mutes_active", "tenant",                                 \
    "Mutes in force that this node knows of, by tenant.")                                 \
  X(bans_active, kGauge, "parley_bans_active", "tenant",                                   \
    "Bans in force that this node knows of, by tenant.")                                  \
  X(valkey_wait_short, kCounter, "parley_valkey_wait_short_total", "",                     \
    "valkey store, wait_replicas > 0: appends answered unavailable because fewer replicas " \
    "than asked confirmed them within wait_timeout_ms.")

namespace parley::metrics {

enum class Type { kCounter, kGauge, kHistogram };

struct MetricInfo {
  std::string_view name;
  Type type;
  std::string_view help;
};

// The latency histograms (per thread, fixed buckets) and the error counter by
// code are declared here too; their shapes are fixed in metrics.cc.
inline constexpr MetricInfo kAckSeconds{
    "parley_ack_seconds", Type::kHistogram,
    "Time from a pub frame's arrival to its ack being written."};
inline constexpr MetricInfo kStageSeconds{
    "parley_stage_seconds", Type::kHistogram,
    "Latency of each stage of a message: decode, queue wait before its hub shard, store "
    "append, fan-out to the tick, socket write; of an event: event_append (emit to store ack), "
    "event_dispatch (ack to a reader's connection queue), leaderboard (a push pass)."};
inline constexpr MetricInfo kUpstreamRequestSeconds{
    "parley_upstream_request_seconds", Type::kHistogram,
    "Time from sending an upstream request to reading its 2xx answer."};
inline constexpr MetricInfo kValkeyScriptSeconds{
    "parley_valkey_script_seconds", Type::kHistogram,
    "valkey store: round trip of the append script (EVALSHA), from the call to its reply."};
inline constexpr MetricInfo kRejections{"parley_rejections_total", Type::kCounter,
                                        "Error replies sent, by code."};
// Fan-out traffic by tenant/namespace and by the form members get it in
// (namespace_traffic.h): payload bytes of tick frames and the items in them.
inline constexpr MetricInfo kNamespaceBytes{
    "parley_namespace_bytes_out_total", Type::kCounter,
    "Payload bytes of fan-out frames (msg, state, presence), by namespace (tenant/namespace) "
    "and encoding (json, msgpack, json+delta, msgpack+delta: members with state deltas)."};
inline constexpr MetricInfo kNamespaceDeliveries{
    "parley_namespace_deliveries_total", Type::kCounter,
    "Items (msg, state, presence) in fan-out frames, by namespace and encoding."};
inline constexpr MetricInfo kNamespaceWireBytes{
    "parley_namespace_wire_bytes_out_total", Type::kCounter,
    "Bytes written to client sockets (transport framing included, after conversion to the "
    "connection's encoding), by namespace (tenant/namespace of fan-out frames; tenant/- for "
    "replies and other frames of no channel) and the connection's encoding."};

enum class Scraped {
#define PARLEY_SCRAPED_ID(id, type, name, label, help) id,
  PARLEY_SCRAPED(PARLEY_SCRAPED_ID)
#undef PARLEY_SCRAPED_ID
};

struct ScrapedInfo {
  MetricInfo info;
  std::string_view label;
};

inline constexpr ScrapedInfo kScraped[] = {
#define PARLEY_SCRAPED_ROW(id, type, name, label, help) {{name, Type::type, help}, label},
    PARLEY_SCRAPED(PARLEY_SCRAPED_ROW)
#undef PARLEY_SCRAPED_ROW
};
inline constexpr size_t kScrapedCount = std::size(kScraped);

// Every family the exposition holds, in its order: the registry tests and
// dashboards can check against.
inline constexpr auto kDeclared = [] {
  std::array<MetricInfo, 8 +
#define PARLEY_COUNT(...) +1
                             PARLEY_THREAD_COUNTERS(PARLEY_COUNT) PARLEY_THREAD_GAUGES(PARLEY_COUNT)
#undef PARLEY_COUNT
                             + kScrapedCount>
      all{};
  size_t i = 0;
  all[i++] = kAckSeconds;
  all[i++] = kStageSeconds;
#define PARLEY_COUNTER_ROW(field, name, help) all[i++] = MetricInfo{name, Type::kCounter, help};
#define PARLEY_GAUGE_ROW(field, name, help) all[i++] = MetricInfo{name, Type::kGauge, help};
  PARLEY_THREAD_COUNTERS(PARLEY_COUNTER_ROW)
  PARLEY_THREAD_GAUGES(PARLEY_GAUGE_ROW)
#undef PARLEY_COUNTER_ROW
#undef PARLEY_GAUGE_ROW
  all[i++] = kRejections;
  all[i++] = kUpstreamRequestSeconds;
  all[i++] = kValkeyScriptSeconds;
  all[i++] = kNamespaceBytes;
  all[i++] = kNamespaceDeliveries;
  all[i++] = kNamespaceWireBytes;
  for (const auto& s : kScraped) all[i++] = s.info;
  return all;
}();

}  // namespace parley::metrics
