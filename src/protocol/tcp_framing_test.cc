#include "protocol/tcp_framing.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace parley::protocol {
namespace {

using Status = LengthPrefixedReader::Status;

std::vector<std::string> drain(LengthPrefixedReader& r) {
  std::vector<std::string> frames;
  for (auto n = r.next(); n.status == Status::kFrame; n = r.next()) {
    frames.emplace_back(n.frame);
  }
  return frames;
}

TEST(LengthPrefix, IsBigEndian) {
  char out[4];
  encode_length_prefix(0x01020304, out);
  EXPECT_EQ(std::string(out, 4), std::string("\x01\x02\x03\x04", 4));
  encode_length_prefix(0xfffffffe, out);
  EXPECT_EQ(std::string(out, 4), std::string("\xff\xff\xff\xfe", 4));
}

TEST(LengthPrefix, AppendsPrefixAndPayload) {
  std::string out = "x";
  append_length_prefixed(out, R"({"op":"ping"})");
  EXPECT_EQ(out, std::string("x\0\0\0\x0d", 5) + R"({"op":"ping"})");
}

TEST(LengthPrefixedReader, NeedsMoreUntilAFrameIsComplete) {
  LengthPrefixedReader r(100);
  EXPECT_EQ(r.next().status, Status::kNeedMore);
  r.append(std::string("\0\0", 2));
  EXPECT_EQ(r.next().status, Status::kNeedMore);
  r.append(std::string("\0\x03" "ab", 4));
  EXPECT_EQ(r.next().status, Status::kNeedMore);
  r.append("c");
  const auto n = r.next();
  ASSERT_EQ(n.status, Status::kFrame);
  EXPECT_EQ(n.frame, "abc");
  EXPECT_EQ(n.declared_length, 3u);
  EXPECT_EQ(r.next().status, Status::kNeedMore);
  EXPECT_EQ(r.buffered_bytes(), 0u);
}

TEST(LengthPrefixedReader, YieldsSeveralFramesFromOneReceive) {
  std::string wire;
  append_length_prefixed(wire, "one");
  append_length_prefixed(wire, "");
  append_length_prefixed(wire, "three");
  LengthPrefixedReader r(100);
  r.append(wire);
  EXPECT_EQ(drain(r), (std::vector<std::string>{"one", "", "three"}));
}

TEST(LengthPrefixedReader, ReassemblesFramesSplitAtEveryBoundary) {
  std::string wire;
  const std::vector<std::string> sent{R"({"op":"ping"})", "", std::string(300, 'z'), "x"};
  for (const auto& f : sent) append_length_prefixed(wire, f);
  for (size_t chunk = 1; chunk <= wire.size(); ++chunk) {
    LengthPrefixedReader r(1000);
    std::vector<std::string> got;
    for (size_t i = 0; i < wire.size(); i += chunk) {
      r.append(std::string_view(wire).substr(i, chunk));
      for (auto& f : drain(r)) got.push_back(std::move(f));
    }
    EXPECT_EQ(got, sent) << "chunk " << chunk;
    EXPECT_EQ(r.buffered_bytes(), 0u);
  }
}

TEST(LengthPrefixedReader, ReassemblesFramesSplitAtRandomBoundaries) {
  std::mt19937 rng(7);
  std::vector<std::string> sent;
  std::string wire;
  for (int i = 0; i < 200; ++i) {
    sent.emplace_back(rng() % 700, static_cast<char>('a' + i % 26));
    append_length_prefixed(wire, sent.back());
  }
  LengthPrefixedReader r(700);
  std::vector<std::string> got;
  for (size_t i = 0; i < wire.size();) {
    const size_t n = std::min<size_t>(1 + rng() % 1500, wire.size() - i);
    r.append(std::string_view(wire).substr(i, n));
    i += n;
    for (auto& f : drain(r)) got.push_back(std::move(f));
  }
  EXPECT_EQ(got, sent);
}

TEST(LengthPrefixedReader, ReadsInPlaceThroughPrepareAndCommit) {
  std::string wire;
  append_length_prefixed(wire, "hello");
  append_length_prefixed(wire, "world");
  LengthPrefixedReader r(100);
  std::vector<std::string> got;
  for (size_t i = 0; i < wire.size(); i += 3) {
    const size_t n = std::min<size_t>(3, wire.size() - i);
    auto room = r.prepare(64);
    ASSERT_GE(room.size(), 64u);
    std::memcpy(room.data(), wire.data() + i, n);
    r.commit(n);
    for (auto& f : drain(r)) got.push_back(std::move(f));
  }
  EXPECT_EQ(got, (std::vector<std::string>{"hello", "world"}));
}

TEST(LengthPrefixedReader, AcceptsAFrameOfExactlyTheCap) {
  std::string wire;
  append_length_prefixed(wire, std::string(100, 'm'));
  LengthPrefixedReader r(100);
  r.append(wire);
  const auto n = r.next();
  EXPECT_EQ(n.status, Status::kFrame);
  EXPECT_EQ(n.frame.size(), 100u);
}

TEST(LengthPrefixedReader, ReportsALengthOverTheCapAtOnceAndStaysFailed) {
  LengthPrefixedReader r(100);
  r.append(std::string("\0\0\0\x65", 4));  // 101: the payload need not arrive
  auto n = r.next();
  EXPECT_EQ(n.status, Status::kOversized);
  EXPECT_EQ(n.declared_length, 101u);
  EXPECT_TRUE(r.failed());
  std::string more;
  append_length_prefixed(more, "ok");
  r.append(more);
  n = r.next();
  EXPECT_EQ(n.status, Status::kOversized);
  EXPECT_EQ(n.declared_length, 101u);
}

TEST(LengthPrefixedReader, ReportsTheFullDeclaredLength) {
  LengthPrefixedReader r(1 << 20);
  r.append("\xff\xff\xff\xff");
  const auto n = r.next();
  EXPECT_EQ(n.status, Status::kOversized);
  EXPECT_EQ(n.declared_length, 0xffffffffu);
}

TEST(LengthPrefixedReader, KeepsFramesAfterAPartialOneAcrossCompaction) {
  std::string wire;
  append_length_prefixed(wire, std::string(40, 'a'));
  append_length_prefixed(wire, std::string(40, 'b'));
  LengthPrefixedReader r(100);
  r.append(std::string_view(wire).substr(0, 60));  // first frame and part of the second
  EXPECT_EQ(drain(r), std::vector<std::string>{std::string(40, 'a')});
  r.append(std::string_view(wire).substr(60));
  EXPECT_EQ(drain(r), std::vector<std::string>{std::string(40, 'b')});
}

}  // namespace
}  // namespace parley::protocol
