#include "net/thread_buffer.h"

#include <gtest/gtest.h>
#include <pthread.h>

#include <thread>

namespace parley::net {
namespace {

struct TagA;
struct TagB;

char* buffer_a() { return thread_buffer<TagA, 4096>(); }
char* buffer_b() { return thread_buffer<TagB, 65536>(); }

TEST(ThreadBufferTest, OnePerThreadAndTagKeptAcrossCalls) {
  char* a = buffer_a();
  ASSERT_NE(a, nullptr);
  a[0] = 'x';
  a[4095] = 'y';
  EXPECT_EQ(buffer_a(), a);
  EXPECT_EQ(a[0], 'x');
  EXPECT_NE(buffer_b(), a);
  char* other = nullptr;
  std::thread([&] { other = buffer_a(); }).join();
  EXPECT_NE(other, nullptr);
  EXPECT_NE(other, a);
}

TEST(ThreadBufferTest, LivesOutsideTheThreadsStack) {
  // glibc puts a thread's static TLS block (where a thread_local array would
  // be, for every thread) inside the thread's stack mapping.
  char* lo = nullptr;
  char* hi = nullptr;
  char* buf = nullptr;
  std::thread([&] {
    pthread_attr_t attr;
    void* addr = nullptr;
    size_t size = 0;
    ASSERT_EQ(pthread_getattr_np(pthread_self(), &attr), 0);
    ASSERT_EQ(pthread_attr_getstack(&attr, &addr, &size), 0);
    pthread_attr_destroy(&attr);
    lo = static_cast<char*>(addr);
    hi = lo + size;
    buf = buffer_b();
  }).join();
  ASSERT_NE(buf, nullptr);
  EXPECT_TRUE(buf + 65536 <= lo || buf >= hi);
}

}  // namespace
}  // namespace parley::net
