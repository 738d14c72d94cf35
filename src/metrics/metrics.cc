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
  for (unsigned i = 0; i < loops + 1; ++i) {
    slots_.push_back(std::make_unique<ThreadMetrics>());
    slots_.back()->traffic = &traffic_;
  }
}

ThreadMetrics& Metrics::local() {
  const int i = runtime::LoopGroup::current();
  if (i >= 0 && static_cast<size_t>(i) + 1 < slots_.size()) return *slots_[i];
  return *slots_.back();
}

namespace {

void header(std::string& out, const MetricInfo& m) {
  static constexpr const char* kTypeNames[] = {"counter", "gauge", "histogram"};
  out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", m.name, m.help, m.name,
                     kTypeNames[static_cast<int>(m.type)]);
}

template <typename Get>
void render_histogram(std::string& out, std::string_view name, const char* labels,
                      const std::vector<std::unique_ptr<ThreadMetrics>>& slots, Get get) {
  std::array<uint64_t, Histogram::kBounds.size() + 1> buckets{};
  uint64_t count = 0;
  double sum = 0;
  for (const auto& s : slots) get(*s).add_to(buckets, count, sum);
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

}  // namespace

std::string Metrics::render() const {
  std::string out;
  out.reserve(16 * 1024);
  header(out, kAckSeconds);
  auto stage = [](Stage st) {
    return [st](const ThreadMetrics& t) -> const Histogram& { return t.stages[static_cast<int>(st)]; };
  };
  render_histogram(out, kAckSeconds.name, "", slots_, stage(Stage::kAck));
  static constexpr struct { Stage stage; const char* label; } kStages[] = {
      {Stage::kDecode, "stage=\"decode\""},       {Stage::kQueueWait, "stage=\"queue_wait\""},
      {Stage::kAppend, "stage=\"append\""},       {Stage::kFanout, "stage=\"fanout\""},
      {Stage::kWrite, "stage=\"write\""},
      {Stage::kEventAppend, "stage=\"event_append\""},
      {Stage::kEventDispatch, "stage=\"event_dispatch\""},
      {Stage::kLeaderboard, "stage=\"leaderboard\""}};
  header(out, kStageSeconds);
  for (const auto& s : kStages) {
    render_histogram(out, kStageSeconds.name, s.label, slots_, stage(s.stage));
  }
#define PARLEY_RENDER_COUNTER(field, name, help)                                 \
  header(out, MetricInfo{name, Type::kCounter, help});                          \
  out += fmt::format("{} {}\n", name, sum_of(slots_, &ThreadMetrics::field));
#define PARLEY_RENDER_GAUGE(field, name, help)                                   \
  header(out, MetricInfo{name, Type::kGauge, help});                            \
  out += fmt::format("{} {}\n", name, sum_of(slots_, &ThreadMetrics::field));
  PARLEY_THREAD_COUNTERS(PARLEY_RENDER_COUNTER)
  PARLEY_THREAD_GAUGES(PARLEY_RENDER_GAUGE)
#undef PARLEY_RENDER_COUNTER
#undef PARLEY_RENDER_GAUGE
  header(out, kRejections);
  for (int c = 0; c < kErrorCodeCount; ++c) {
    uint64_t v = 0;
    for (const auto& s : slots_) v += s->rejections[c].load(std::memory_order_relaxed);
    out += fmt::format("{}{{code=\"{}\"}} {}\n", kRejections.name,
                       wire_name(static_cast<ErrorCode>(c)), v);
  }
  header(out, kUpstreamRequestSeconds);
  render_histogram(out, kUpstreamRequestSeconds.name, "", slots_,
                   [](const ThreadMetrics& t) -> const Histogram& { return t.upstream_request; });
  header(out, kValkeyScriptSeconds);
  render_histogram(out, kValkeyScriptSeconds.name, "", slots_,
                   [](const ThreadMetrics& t) -> const Histogram& { return t.valkey_script; });
  const auto traffic = traffic_.rows();
  for (const MetricInfo* m : {&kNamespaceBytes, &kNamespaceDeliveries, &kNamespaceWireBytes}) {
    header(out, *m);
    for (const auto& r : traffic) {
      const uint64_t v = m == &kNamespaceBytes ? r.bytes : m == &kNamespaceDeliveries ? r.deliveries : r.wire;
      if (m != &kNamespaceWireBytes && r.bytes == 0 && r.deliveries == 0) continue;  // a "-" row
      out += fmt::format("{}{{namespace=\"{}\",encoding=\"{}\"}} {}\n", m->name, r.ns,
                         wire_form_name(r.form), v);
    }
  }
  std::vector<Sample> samples;
  for (size_t i = 0; i < kScrapedCount; ++i) {
    const ScrapedInfo& m = kScraped[i];
    header(out, m.info);
    samples.clear();
    if (sources_[i]) sources_[i](samples);
    for (const auto& s : samples) {
      if (m.label.empty()) {
        out += fmt::format("{} {}\n", m.info.name, s.value);
      } else {
        out += fmt::format("{}{{{}=\"{}\"}} {}\n", m.info.name, m.label, s.label_value, s.value);
      }
    }
  }
  return out;
}

Metrics::HistogramTotals Metrics::histogram(Stage s) const {
  HistogramTotals t;
  for (const auto& slot : slots_) slot->stages[static_cast<int>(s)].add_to(t.buckets, t.count, t.sum_s);
  return t;
}

uint64_t Metrics::total(std::atomic<uint64_t> ThreadMetrics::*counter) const {
  uint64_t n = 0;
  for (const auto& slot : slots_) n += (slot.get()->*counter).load(std::memory_order_relaxed);
  return n;
}

int64_t Metrics::total(std::atomic<int64_t> ThreadMetrics::*gauge) const {
  int64_t n = 0;
  for (const auto& slot : slots_) n += (slot.get()->*gauge).load(std::memory_order_relaxed);
  return n < 0 ? 0 : n;
}

uint64_t Metrics::rejections(ErrorCode c) const {
  uint64_t n = 0;
  for (const auto& slot : slots_) n += slot->rejections[static_cast<int>(c)].load(std::memory_order_relaxed);
  return n;
}

std::vector<Metrics::Sample> Metrics::sample(Scraped id) const {
  std::vector<Sample> out;
  if (const auto& src = sources_[static_cast<size_t>(id)]) src(out);
  return out;
}

}  // namespace parley::metrics
