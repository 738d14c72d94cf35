#include "metrics/metrics.h"

#include <fmt/format.h>

#include "runtime/loop_group.h"

namespace parley::metrics {

void Histogram::observe_ns(int64_t ns) {
  if (ns < 0) ns = 0;
  const double s = static_cast<double>(ns) * 1e-9;
  size_t i = 0;
  while (i < kBounds.size() && s > kBounds[i]) ++i;
  buckets_[i].fetch_add(1, std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
  sum_ns_.fetch_add(static_cast<uint64_t>(ns), std::memory_order_relaxed);
}

void Histogram::add_to(std::array<uint64_t, kBounds.size() + 1>& buckets, uint64_t& count,
                       double& sum_s) const {
  for (size_t i = 0; i < buckets.size(); ++i) buckets[i] += buckets_[i].load(std::memory_order_relaxed);
  count += count_.load(std::memory_order_relaxed);
  sum_s += static_cast<double>(sum_ns_.load(std::memory_order_relaxed)) * 1e-9;
}

Metrics::Metrics(unsigned loops) {
  for (unsigned i = 0; i < loops + 1; ++i) slots_.push_back(std::make_unique<ThreadMetrics>());
}

ThreadMetrics& Metrics::local() {
  const int i = runtime::LoopGroup::current();
  if (i >= 0 && static_cast<size_t>(i) + 1 < slots_.size()) return *slots_[i];
  return *slots_.back();
}

namespace {

void render_histogram(std::string& out, const char* name, const char* help, const char* labels,
                      const std::vector<std::unique_ptr<ThreadMetrics>>& slots, Stage stage,
                      bool header) {
  std::array<uint64_t, Histogram::kBounds.size() + 1> buckets{};
  uint64_t count = 0;
  double sum = 0;
  for (const auto& s : slots) s->stages[static_cast<int>(stage)].add_to(buckets, count, sum);
  if (header) {
    out += fmt::format("# HELP {} {}\n# TYPE {} histogram\n", name, help, name);
  }
  const std::string sep = labels[0] ? "," : "";
  uint64_t cumulative = 0;
  for (size_t i = 0; i < Histogram::kBounds.size(); ++i) {
    cumulative += buckets[i];
    out += fmt::format("{}_bucket{{{}{}le=\"{}\"}} {}\n", name, labels, sep, Histogram::kBounds[i],
                       cumulative);
  }
  cumulative += buckets.back();
  out += fmt::format("{}_bucket{{{}{}le=\"+Inf\"}} {}\n", name, labels, sep, cumulative);
  const std::string lbl = labels[0] ? fmt::format("{{{}}}", labels) : "";
  out += fmt::format("{}_sum{} {}\n{}_count{} {}\n", name, lbl, sum, name, lbl, count);
}

template <typename Field>
uint64_t sum_of(const std::vector<std::unique_ptr<ThreadMetrics>>& slots, Field f) {
  int64_t total = 0;
  for (const auto& s : slots) total += static_cast<int64_t>((s.get()->*f).load(std::memory_order_relaxed));
  return total < 0 ? 0 : static_cast<uint64_t>(total);
}

void counter(std::string& out, const char* name, const char* help, uint64_t v, bool gauge = false) {
  out += fmt::format("# HELP {} {}\n# TYPE {} {}\n{} {}\n", name, help, name,
                     gauge ? "gauge" : "counter", name, v);
}

}  // namespace

std::string Metrics::render() const {
  std::string out;
  out.reserve(16 * 1024);
  render_histogram(out, "parley_ack_seconds",
                   "Time from a pub frame's arrival to its ack being written.", "", slots_,
                   Stage::kAck, true);
  static constexpr struct { Stage stage; const char* label; } kStages[] = {
      {Stage::kDecode, "stage=\"decode\""},       {Stage::kQueueWait, "stage=\"queue_wait\""},
      {Stage::kAppend, "stage=\"append\""},       {Stage::kFanout, "stage=\"fanout\""},
      {Stage::kWrite, "stage=\"write\""}};
  bool first = true;
  for (const auto& s : kStages) {
    render_histogram(out, "parley_stage_seconds",
                     "Latency of each stage of a message: decode, queue wait before its hub "
                     "shard, store append, fan-out to the tick, socket write.",
                     s.label, slots_, s.stage, first);
    first = false;
  }
  counter(out, "parley_frames_in_total", "Client frames received.",
          sum_of(slots_, &ThreadMetrics::frames_in));
  counter(out, "parley_frames_out_total", "Frames written to clients.",
          sum_of(slots_, &ThreadMetrics::frames_out));
  counter(out, "parley_bytes_out_total", "Payload bytes written to clients.",
          sum_of(slots_, &ThreadMetrics::bytes_out));
  counter(out, "parley_deliveries_total", "Items (msg, state, presence) delivered to connections.",
          sum_of(slots_, &ThreadMetrics::deliveries));
  counter(out, "parley_slow_consumer_disconnects_total",
          "Connections closed with 4010 for exceeding max_queue_bytes.",
          sum_of(slots_, &ThreadMetrics::slow_consumers));
  counter(out, "parley_connections_opened_total", "Client connections accepted.",
          sum_of(slots_, &ThreadMetrics::connections_opened));
  counter(out, "parley_connections_refused_total",
          "Connections refused at accept: the process connection limit was reached.",
          sum_of(slots_, &ThreadMetrics::connections_refused));
  counter(out, "parley_session_queue_bytes", "Bytes waiting in connection write queues.",
          sum_of(slots_, &ThreadMetrics::queued_bytes), true);
  out += "# HELP parley_rejections_total Error replies sent, by code.\n"
         "# TYPE parley_rejections_total counter\n";
  for (int c = 0; c < kErrorCodeCount; ++c) {
    uint64_t v = 0;
    for (const auto& s : slots_) v += s->rejections[c].load(std::memory_order_relaxed);
    out += fmt::format("parley_rejections_total{{code=\"{}\"}} {}\n",
                       wire_name(static_cast<ErrorCode>(c)), v);
  }
  for (const auto& c : collectors_) c(out);
  return out;
}

}  // namespace parley::metrics
