#include "session/connection_traffic.h"

#include <algorithm>
#include <atomic>
#include <memory>

#include "session/client_session.h"
#include "session/gateway.h"
#include "tenant/tenant_registry.h"

namespace parley::session {

namespace {

metrics::WireForm form_of(const ClientSession& s) {
  return metrics::wire_form(s.encoding() == protocol::Encoding::kMsgpack, s.state_deltas());
}

// Keeps the n with the most recent bytes, most first.
void keep_top(std::vector<ConnectionBytes>& v, size_t n) {
  const auto more = [](const ConnectionBytes& a, const ConnectionBytes& b) {
    return a.recent != b.recent ? a.recent > b.recent : a.conn < b.conn;
  };
  if (v.size() > n) {
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(n), v.end(), more);
    v.resize(n);
  }
  std::sort(v.begin(), v.end(), more);
}

}  // namespace

void Gateway::connection_traffic(size_t n, ConnectionTrafficDone done) {
  // Each loop fills its own slot with its own sessions; the last one to finish
  // merges (the counter's acq_rel orders the slots' writes before the merge).
  struct Gather {
    std::vector<ConnectionTraffic> slots;
    std::atomic<unsigned> remaining;
    ConnectionTrafficDone done;
  };
  auto g = std::make_shared<Gather>();
  g->slots.resize(loops_.size());
  g->remaining.store(loops_.size());
  g->done = std::move(done);
  for (unsigned i = 0; i < loops_.size(); ++i) {
    loops_.run_on(i, [this, g, i, n] {
      ConnectionTraffic& mine = g->slots[i];
      for (auto& [id, s] : per_loop_[i]->by_conn) {
        if (!s->authenticated() || s->gone()) continue;
        const uint64_t total = s->bytes_out();
        const uint64_t recent = total - s->bytes_out_listed;
        s->bytes_out_listed = total;
        const metrics::WireForm form = form_of(*s);
        auto& f = mine.by_form[static_cast<size_t>(form)];
        ++f.connections;
        f.bytes_out += total;
        f.recent += recent;
        mine.top.push_back({id, s->tenant()->id, s->user_id(), form, total, recent});
      }
      keep_top(mine.top, n);
      if (g->remaining.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
      ConnectionTraffic all;
      for (auto& slot : g->slots) {
        for (size_t f = 0; f < metrics::kWireForms; ++f) {
          all.by_form[f].connections += slot.by_form[f].connections;
          all.by_form[f].bytes_out += slot.by_form[f].bytes_out;
          all.by_form[f].recent += slot.by_form[f].recent;
        }
        for (auto& c : slot.top) all.top.push_back(std::move(c));
      }
      keep_top(all.top, n);
      g->done(std::move(all));
    });
  }
}

}  // namespace parley::session
