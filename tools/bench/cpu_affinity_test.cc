// compare's split-core flags (issue 29): the CPU lists it pins targets and the
// generator to.
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <thread>

#include "cpu_affinity.h"
#include "options.h"

namespace bench {

namespace {
std::string error_of(const std::string& text) {
  try {
    parse_cpu_list("--server-cpus", text);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "accepted";
}
}  // namespace

TEST(CpuList, ParsesNumbersRangesAndLists) {
  CpuList one = parse_cpu_list("--server-cpus", "0");
  EXPECT_EQ(one.count, 1);
  EXPECT_TRUE(CPU_ISSET(0, &one.set));
  if (sysconf(_SC_NPROCESSORS_CONF) >= 2) {
    CpuList two = parse_cpu_list("--bench-cpus", "0-1");
    EXPECT_EQ(two.count, 2);
    EXPECT_EQ(parse_cpu_list("--bench-cpus", "1,0").count, 2);
    EXPECT_EQ(parse_cpu_list("--bench-cpus", "0,0-1").count, 2);
  }
}

TEST(CpuList, ABadListIsAnErrorNamingTheFlag) {
  EXPECT_EQ(error_of(""), "--server-cpus names no CPU");
  EXPECT_EQ(error_of("a"), "--server-cpus: not a CPU number: 'a'");
  EXPECT_EQ(error_of("-1"), "--server-cpus: not a CPU number: ''");
  EXPECT_EQ(error_of("4096"), "--server-cpus: this machine has no CPU 4096");
  if (sysconf(_SC_NPROCESSORS_CONF) >= 2)
    EXPECT_EQ(error_of("1-0"), "--server-cpus: range 1-0 runs backwards");
  EXPECT_THROW(parse_options({"chat", "--server-cpus", "0"}), std::runtime_error);
}

TEST(CpuList, PinningAThreadConfinesItToTheList) {
  // On a thread of its own, so the test process keeps its mask.
  std::thread([] {
    CpuList cpu0 = parse_cpu_list("--bench-cpus", "0");
    ASSERT_TRUE(pin(0, cpu0));
    cpu_set_t now;
    ASSERT_EQ(sched_getaffinity(0, sizeof now, &now), 0);
    EXPECT_EQ(CPU_COUNT(&now), 1);
    EXPECT_TRUE(CPU_ISSET(0, &now));
    EXPECT_EQ(sched_getcpu(), 0);
  }).join();
}

}  // namespace bench
