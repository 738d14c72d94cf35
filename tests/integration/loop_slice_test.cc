// server.loop_slice_us: the real server's event loop threads run with that
// scheduler slice (runtime/thread_slice.h), read back from the kernel per
// thread; by default (0) they keep the kernel's.
#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "runtime/thread_slice.h"
#include "support/client.h"
#include "support/server_process.h"

namespace parley::testing {
namespace {

struct SchedAttr {
  uint32_t size, sched_policy;
  uint64_t sched_flags;
  int32_t sched_nice;
  uint32_t sched_priority;
  uint64_t sched_runtime, sched_deadline, sched_period;
  uint32_t sched_util_min, sched_util_max;
};

// The slice (us) of each of the process's threads named parley-loop-*.
std::vector<uint64_t> loop_slices_us(pid_t pid) {
  std::vector<uint64_t> out;
  const std::string dir = "/proc/" + std::to_string(pid) + "/task";
  for (const auto& t : std::filesystem::directory_iterator(dir)) {
    std::ifstream comm(t.path() / "comm");
    std::string name;
    std::getline(comm, name);
    if (name.rfind("parley-loop-", 0) != 0) continue;
    SchedAttr a;
    std::memset(&a, 0, sizeof a);
    const auto tid = static_cast<pid_t>(std::stol(t.path().filename().string()));
    if (syscall(SYS_sched_getattr, tid, &a, sizeof a, 0) != 0) continue;
    out.push_back(a.sched_runtime / 1000);
  }
  return out;
}

// Kernels before 6.12 do not report (nor take) a fair thread's slice.
bool kernel_has_slices() { return runtime::thread_slice_us() != 0; }

void serve_one_message(ServerProcess& server) {
  auto c = connect_as(server.http_port(), "alice");
  ASSERT_EQ(op_of(c->join("chat:slice")), "joined");
  c->send(pub_frame("chat:slice", "m1", R"({"text":"hi"})", 2));
  ASSERT_NE(c->expect("ack"), "");
}

TEST(LoopSliceTest, EveryLoopThreadRunsWithTheConfiguredSlice) {
  if (!kernel_has_slices()) GTEST_SKIP() << "no EEVDF custom slices on this kernel";
  ServerProcess server(spec_with_tenants(default_tenants_toml(), "threads = 2\nloop_slice_us = 300"));
  server.start();
  serve_one_message(server);  // the loops have run their start-up tasks
  const auto slices = loop_slices_us(server.pid());
  ASSERT_EQ(slices.size(), 2u);
  for (uint64_t us : slices) EXPECT_EQ(us, 300u);
}

TEST(LoopSliceTest, ByDefaultTheLoopsKeepTheKernelsSlice) {
  if (!kernel_has_slices()) GTEST_SKIP() << "no EEVDF custom slices on this kernel";
  ServerProcess server(spec_with_tenants(default_tenants_toml(), "threads = 1"));
  server.start();
  serve_one_message(server);
  const auto slices = loop_slices_us(server.pid());
  ASSERT_EQ(slices.size(), 1u);
  EXPECT_EQ(slices[0], runtime::thread_slice_us());  // this test's own thread: the default
}

}  // namespace
}  // namespace parley::testing
