// FrameBatch: the `events` frames one delivery pass owes each connection,
// posted to the connection's loop once per pass instead of once per frame.
// A pass makes a frame per (partition, cursor): a consumer of 8 partitions got
// 8 posts (8 scheduler operations, often a wake-up each) and then 8 socket
// writes per pass. Gathered, the connection's loop gets one task, which queues
// the frames corked (EventSink::deliver_event_frames): they leave in one write
// at the end of that loop iteration, with whatever else it had for the
// connection (`committed` and `emitted` replies).
//
// Built and posted on the topic's loop; the frames of one connection keep the
// order they were added in (offset order per partition).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "metrics/metrics.h"
#include "runtime/loop_group.h"
#include "events/event_service.h"

namespace parley::events {

class FrameBatch {
 public:
  // `oldest_ns`: when the frame's oldest event was committed (the dispatch
  // stage histogram measures from it to the frame's queueing).
  void add(std::shared_ptr<EventSink> sink, std::string frame, int64_t oldest_ns) {
    auto [it, fresh] = index_.try_emplace(sink.get(), outs_.size());
    if (fresh) outs_.push_back(Out{std::move(sink), {}, {}});
    Out& o = outs_[it->second];
    o.frames.push_back(std::move(frame));
    o.oldest_ns.push_back(oldest_ns);
  }
  bool empty() const { return outs_.empty(); }

  // One task per connection; the batch is empty afterwards.
  void post(runtime::LoopGroup& loops, metrics::Metrics& metrics) {
    for (Out& o : outs_) {
      const unsigned loop = o.sink->loop();
      loops.run_on(loop, [&metrics, o = std::move(o)]() mutable {
        o.sink->deliver_event_frames(std::move(o.frames));
        const int64_t now = steady_ns();
        for (int64_t t : o.oldest_ns) metrics.local().observe(metrics::Stage::kEventDispatch, now - t);
      });
    }
    outs_.clear();
    index_.clear();
  }

 private:
  struct Out {
    std::shared_ptr<EventSink> sink;
    std::vector<std::string> frames;
    std::vector<int64_t> oldest_ns;
  };
  std::vector<Out> outs_;
  std::unordered_map<const EventSink*, size_t> index_;
};

}  // namespace parley::events
