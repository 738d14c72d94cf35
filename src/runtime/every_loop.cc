#include "runtime/every_loop.h"

#include <atomic>
#include <memory>

namespace parley::runtime {

void run_on_every_loop(LoopGroup& loops, std::function<void(unsigned)> fn,
                       std::function<void()> done) {
  struct Barrier {
    std::atomic<unsigned> remaining;
    std::function<void(unsigned)> fn;
    std::function<void()> done;
  };
  auto b = std::make_shared<Barrier>();
  b->remaining = loops.size();
  b->fn = std::move(fn);
  b->done = std::move(done);
  for (unsigned i = 0; i < loops.size(); ++i) {
    loops.run_on(i, [b, i] {
      if (b->fn) b->fn(i);
      if (b->remaining.fetch_sub(1) == 1 && b->done) b->done();
    });
  }
}

}  // namespace parley::runtime
