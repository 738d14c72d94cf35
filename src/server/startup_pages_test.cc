#include "server/startup_pages.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace parley::server {
namespace {

constexpr size_t kPages = 64;
constexpr size_t kPage = 4096;

// The Rss (KiB) smaps gives the mapping that starts at `at`.
size_t rss_kb_of(const void* at) {
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool in = false;
  const auto want = reinterpret_cast<uintptr_t>(at);
  while (std::getline(smaps, line)) {
    if (line.find('-') != std::string::npos && line.find('-') < line.find(' ')) {
      in = std::strtoull(line.c_str(), nullptr, 16) == want;
    } else if (in && line.rfind("Rss:", 0) == 0) {
      return std::strtoull(line.c_str() + 4, nullptr, 10);
    }
  }
  return SIZE_MAX;
}

class StartupPagesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char name[] = "/tmp/parley-startup-pages-XXXXXX";
    fd_ = ::mkstemp(name);
    ASSERT_GE(fd_, 0);
    ::unlink(name);
    std::vector<uint8_t> bytes(kPages * kPage);
    for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i * 7 + i / kPage);
    ASSERT_EQ(::write(fd_, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
    expected_ = std::move(bytes);
  }
  void TearDown() override { ::close(fd_); }

  uint8_t* map(int prot) {
    void* p = ::mmap(nullptr, kPages * kPage, prot, MAP_PRIVATE, fd_, 0);
    EXPECT_NE(p, MAP_FAILED);
    return static_cast<uint8_t*>(p);
  }
  static unsigned sum(const uint8_t* p) {
    unsigned s = 0;
    for (size_t i = 0; i < kPages * kPage; i += kPage) s += p[i];
    return s;
  }

  int fd_ = -1;
  std::vector<uint8_t> expected_;
};

TEST_F(StartupPagesTest, CleanReadOnlyFilePagesAreUnmappedAndReadBackTheSame) {
  uint8_t* p = map(PROT_READ);
  ASSERT_GT(sum(p), 0u);  // every page touched
  ASSERT_EQ(rss_kb_of(p), kPages * kPage / 1024);
  const ReleasedPages r = release_startup_pages();
  EXPECT_GE(r.mappings, 1u);
  EXPECT_GE(r.bytes, kPages * kPage);
  EXPECT_EQ(rss_kb_of(p), 0u);
  EXPECT_EQ(std::memcmp(p, expected_.data(), expected_.size()), 0);  // faulted back from the file
  ::munmap(p, kPages * kPage);
}

TEST_F(StartupPagesTest, AMappingWithAWrittenPageIsKeptWhole) {
  // What a relocated .data.rel.ro looks like: written once, then made read-only.
  uint8_t* p = map(PROT_READ | PROT_WRITE);
  ASSERT_GT(sum(p), 0u);
  p[5 * kPage + 3] = 0xAB;
  ASSERT_EQ(::mprotect(p, kPages * kPage, PROT_READ), 0);
  const size_t before = rss_kb_of(p);
  (void)release_startup_pages();
  EXPECT_EQ(rss_kb_of(p), before);
  EXPECT_EQ(p[5 * kPage + 3], 0xAB);
  EXPECT_EQ(p[5 * kPage + 4], expected_[5 * kPage + 4]);
  ::munmap(p, kPages * kPage);
}

TEST_F(StartupPagesTest, WritableMappingsAreLeftAlone) {
  uint8_t* p = map(PROT_READ | PROT_WRITE);
  ASSERT_GT(sum(p), 0u);
  const size_t before = rss_kb_of(p);
  (void)release_startup_pages();
  EXPECT_EQ(rss_kb_of(p), before);
  ::munmap(p, kPages * kPage);
}

}  // namespace
}  // namespace parley::server
