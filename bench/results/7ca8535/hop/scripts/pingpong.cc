// Hand-off cost between two loops of a LoopGroup: loop 0 hands a task to loop 1,
// which hands one back; ROUNDS round trips, each started GAP_US after the previous
// one ended (a timer on loop 0), so that with a gap both loops are asleep when
// their hand-off arrives (the quiet regime), without one they are mostly awake.
// Prints process CPU time per round trip and context switches per round trip.
#include <sys/resource.h>
#include <time.h>

#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>

#include "runtime/loop_group.h"

using parley::runtime::LoopGroup;

static double cpu_s() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? atoi(argv[1]) : 20000;
  const int gap_us = argc > 2 ? atoi(argv[2]) : 200;
  LoopGroup loops(2);
  loops.start();
  boost::asio::steady_timer timer(loops.loop(0));
  std::promise<void> done;
  int left = rounds;
  std::function<void()> start_round;
  auto back = [&] {  // on loop 0
    if (--left == 0) {
      done.set_value();
      return;
    }
    if (gap_us == 0) {
      start_round();
      return;
    }
    timer.expires_after(std::chrono::microseconds(gap_us));
    timer.async_wait([&](boost::system::error_code) { start_round(); });
  };
  start_round = [&] { loops.run_on(1, [&] { loops.run_on(0, back); }); };
  rusage r0, r1;
  getrusage(RUSAGE_SELF, &r0);
  const double c0 = cpu_s();
  const auto w0 = std::chrono::steady_clock::now();
  loops.run_on(0, start_round);
  done.get_future().wait();
  const double c1 = cpu_s();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
  getrusage(RUSAGE_SELF, &r1);
  loops.stop();
  const double per = (c1 - c0) / rounds * 1e6;
  const double busy = wall / rounds * 1e6 - gap_us;
  printf("rounds %d gap_us %d cpu_us/round %.2f latency_us/round %.2f vol_cs/round %.2f invol_cs/round %.2f\n",
         rounds, gap_us, per, busy, double(r1.ru_nvcsw - r0.ru_nvcsw) / rounds,
         double(r1.ru_nivcsw - r0.ru_nivcsw) / rounds);
}
