// Unit tests of the bench's pure parts: histogram, WebSocket codec, seq checks,
// server frame reading, tokens, the hook figures of /metrics.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "channel_audit.h"
#include "histogram.h"
#include "hook_figures.h"
#include "options.h"
#include "server_frame.h"
#include "token.h"
#include "ws_codec.h"

namespace bench {
namespace {

TEST(Histogram, PercentilesAreWithinBucketPrecision) {
  Histogram h;
  for (int i = 1; i <= 100000; ++i) h.record(int64_t(i) * 1000);  // 1 us .. 100 ms
  EXPECT_EQ(h.count(), 100000u);
  EXPECT_NEAR(double(h.percentile(50)), 50e6, 50e6 * 0.02);
  EXPECT_NEAR(double(h.percentile(99)), 99e6, 99e6 * 0.02);
  EXPECT_EQ(h.max(), 100000000u);
  EXPECT_LE(h.percentile(100), h.max());
}

TEST(Histogram, MergeAndSparseRoundTrip) {
  Histogram a, b;
  a.record(5);
  a.record(123456);
  b.add_sparse(a.sparse(), a.max(), a.sum());
  EXPECT_EQ(b.count(), 2u);
  EXPECT_EQ(b.percentile(100), a.percentile(100));
  a.merge(b);
  EXPECT_EQ(a.count(), 4u);
}

TEST(Histogram, BucketsCoverEveryValueOnce) {
  for (uint64_t v : {0ull, 1ull, 63ull, 64ull, 65ull, 1000ull, 123456789ull, 1ull << 39}) {
    uint32_t i = Histogram::index_of(v);
    EXPECT_LE(Histogram::lowest_of(i), v);
    EXPECT_GT(Histogram::lowest_of(i) + Histogram::width_of(i), v);
  }
}

TEST(WsCodec, MaskedFrameRoundTrips) {
  for (size_t len : {0u, 5u, 125u, 126u, 1000u, 70000u}) {
    std::string payload(len, 'a');
    for (size_t i = 0; i < len; ++i) payload[i] = char('a' + i % 26);
    std::string out;
    ws::append_frame(out, ws::kText, payload, 0xdeadbeef);
    ws::FrameHeader h;
    ASSERT_TRUE(ws::parse_header(out.data(), out.size(), h));
    EXPECT_TRUE(h.fin);
    EXPECT_TRUE(h.masked);
    ASSERT_EQ(h.payload_len, len);
    ASSERT_EQ(h.header_len + len, out.size());
    ws::apply_mask(out.data() + h.header_len, len, h.mask);
    EXPECT_EQ(out.substr(h.header_len), payload);
    EXPECT_FALSE(ws::parse_header(out.data(), 1, h));
  }
}

TEST(WsCodec, AcceptKeyMatchesRfcExample) {
  EXPECT_EQ(ws::accept_for("dGhlIHNhbXBsZSBub25jZQ=="), "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
  EXPECT_EQ(ws::check_handshake_response(
                "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n",
                "dGhlIHNhbXBsZSBub25jZQ=="),
            "");
  EXPECT_NE(ws::check_handshake_response("HTTP/1.1 404 Not Found\r\n\r\n", "x"), "");
}

TEST(Membership, ClassifiesGapsReordersAndDuplicates) {
  Membership m;
  m.last_seq = 10;
  EXPECT_EQ(m.receive(11), Membership::Verdict::kInOrder);
  EXPECT_EQ(m.receive(13), Membership::Verdict::kGap);  // 12 missing
  EXPECT_EQ(m.missing, std::vector<uint64_t>{12});
  EXPECT_EQ(m.receive(12), Membership::Verdict::kReordered);
  EXPECT_TRUE(m.missing.empty());
  EXPECT_EQ(m.receive(13), Membership::Verdict::kDuplicate);
  EXPECT_EQ(m.receive(15), Membership::Verdict::kGap);
  EXPECT_EQ(m.missing.size(), 1u);  // 14 stays lost unless it comes
}

TEST(ChannelState, SameSeqWithAnotherIdIsAMismatch) {
  ChannelState ch;
  ch.note_join(5);
  EXPECT_TRUE(ch.record_ack(6, 100));
  EXPECT_TRUE(ch.record_ack(6, 100));
  EXPECT_FALSE(ch.record_ack(6, 101));
  EXPECT_EQ(ch.reused, std::set<uint64_t>{6});  // the first acked message is lost
  EXPECT_TRUE(ch.record_seen(7, 200));
  EXPECT_FALSE(ch.record_seen(7, 201));
  EXPECT_EQ(ch.final_seq(), 7u);
}

TEST(FrameReader, ReadsObjectsAndTickBatches) {
  FrameReader r;
  std::string batch =
      R"([{"op":"msg","ch":"chat:b1.3","seq":57,"from":"u1","id":"4294967297","ts":1,"body":{"p":"x","t":99}},)"
      R"({"op":"state","ch":"w:1","from":"u2","key":"pos","body":{"t":7,"x":1}},)"
      R"({"op":"presence","ch":"w:1","join":["u2"],"leave":[]}])";
  std::string padded = batch + std::string(simdjson::SIMDJSON_PADDING, ' ');
  std::vector<Event> got;
  ASSERT_TRUE(r.read(padded.data(), batch.size(), padded.size(), [&](const Event& e) {
    Event copy = e;
    copy.ch = {};
    got.push_back(copy);
  }));
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].op, Op::kMsg);
  EXPECT_EQ(got[0].seq, 57u);
  EXPECT_TRUE(got[0].id_ok);
  EXPECT_EQ(got[0].id, 4294967297u);
  EXPECT_EQ(got[0].sent_ns, 99);
  EXPECT_EQ(got[1].op, Op::kState);
  EXPECT_EQ(got[1].sent_ns, 7);
  EXPECT_EQ(got[2].op, Op::kPresence);

  std::string err = R"({"op":"error","rid":3,"code":"rate_limited","msg":"slow","retry_ms":200})";
  std::string p2 = err + std::string(simdjson::SIMDJSON_PADDING, ' ');
  Event e;
  ASSERT_TRUE(r.read(p2.data(), err.size(), p2.size(), [&](const Event& ev) {
    e = ev;
    e.code = {};
    EXPECT_EQ(ev.code, "rate_limited");
  }));
  EXPECT_EQ(e.op, Op::kError);
  EXPECT_EQ(e.rid, 3);
  EXPECT_EQ(e.retry_ms, 200);
}

TEST(FrameReader, HistoryRepliesYieldEachMessage) {
  FrameReader r;
  std::string h =
      R"({"op":"history","rid":0,"ch":"c:r.0","msgs":[{"op":"msg","ch":"c:r.0","seq":1,"id":"7","body":{}},{"op":"msg","ch":"c:r.0","seq":2,"id":"8","body":{}}]})";
  std::string p = h + std::string(simdjson::SIMDJSON_PADDING, ' ');
  std::vector<Op> ops;
  ASSERT_TRUE(r.read(p.data(), h.size(), p.size(), [&](const Event& e) { ops.push_back(e.op); }));
  EXPECT_EQ(ops, (std::vector<Op>{Op::kHistoryMsg, Op::kHistoryMsg, Op::kHistory}));
}

TEST(Token, IsThreeBase64UrlParts) {
  std::string t = mint_token("secret", "demo", "u1", 2000000000);
  EXPECT_EQ(std::count(t.begin(), t.end(), '.'), 2);
  EXPECT_EQ(t.find('='), std::string::npos);
  EXPECT_EQ(t.substr(0, t.find('.')), base64url(R"({"alg":"HS256","typ":"JWT"})"));
}

}  // namespace
TEST(Options, NumbersAreParsedWhole) {
  auto o = bench::parse_options({"chat", "--conns", "12", "--rate", "2.5", "--target", "127.0.0.1:7700"});
  EXPECT_EQ(o.conns, 12);
  EXPECT_DOUBLE_EQ(o.rate, 2.5);
  EXPECT_EQ(o.host, "127.0.0.1");
  EXPECT_EQ(o.port, 7700);
}

TEST(Options, LoadXMultipliesThePresetsRatesWhereverItStands) {
  auto o = bench::parse_options({"world", "--load-x", "5"});
  EXPECT_DOUBLE_EQ(o.state_hz, 50);
  EXPECT_DOUBLE_EQ(o.rate, 25);
  EXPECT_EQ(o.conns, 500);
  EXPECT_DOUBLE_EQ(o.churn_per_s, 2);
  // Before an explicit rate it still applies to that rate, once.
  o = bench::parse_options({"broadcast", "--load-x", "5", "--rate", "2000"});
  EXPECT_DOUBLE_EQ(o.rate, 10000);
  EXPECT_THROW(bench::parse_options({"broadcast", "--load-x", "0"}), std::runtime_error);
}

TEST(Options, ABadValueIsAnErrorNamingTheFlag) {
  auto message = [](std::vector<std::string> args) {
    try {
      bench::parse_options(args);
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(message({"--conns", "abc"}), "--conns must be a whole number, not \"abc\"");
  EXPECT_EQ(message({"--conns", "5x"}), "--conns must be a whole number, not \"5x\"");
  EXPECT_EQ(message({"--rate", ""}), "--rate must be a number, not \"\"");
  EXPECT_EQ(message({"--target", "127.0.0.1:http"}),
            "--target's port must be a whole number, not \"http\"");
  EXPECT_EQ(message({"--target", "127.0.0.1:0"}), "--target's port must be 1-65535");
  EXPECT_EQ(message({"--conns"}), "--conns wants a value");
}

TEST(HookFigures, ReadsTheSamplesOfItsOwnLabelOnly) {
  const std::string metrics =
      "# TYPE parley_hook_requests_total counter\n"
      "parley_hook_requests_total{hook=\"demo/chat/pub\"} 1200\n"
      "parley_hook_requests_total{hook=\"demo/chat/join\"} 7\n"
      "parley_hook_requests_total{hook=\"demo/chatter/pub\"} 9\n"
      "parley_hook_allowed_total{hook=\"demo/chat/pub\"} 1199\n"
      "parley_hook_timeouts_total{hook=\"demo/chat/pub\"} 1\n"
      "parley_hook_answered_total{hook=\"demo/chat/pub\"} 1199\n"
      "parley_hook_latency_microseconds_total{hook=\"demo/chat/pub\"} 239800\n"
      "parley_messages_total 1200\n";
  HookFigures h = parse_hook_metrics(metrics, "demo/chat/pub");
  ASSERT_TRUE(h.present);
  EXPECT_EQ(h.requests, 1200);
  EXPECT_EQ(h.allowed, 1199);
  EXPECT_EQ(h.timeouts, 1);
  EXPECT_DOUBLE_EQ(h.mean_latency_us(), 200);
  EXPECT_FALSE(parse_hook_metrics(metrics, "demo/room/pub").present);
}

TEST(HookFigures, ARunIsCleanOnlyWhenEveryAckedPubWasAllowed) {
  HookFigures h;
  h.present = true;
  h.label = "demo/chat/pub";
  h.requests = h.allowed = h.answered = 500;
  EXPECT_EQ(hook_problem(h, 500), "");
  EXPECT_NE(hook_problem(h, 501), "");  // a pub acked that the hook never saw
  h.timeouts = 1;
  EXPECT_NE(hook_problem(h, 500).find("1 timeouts"), std::string::npos);
  h.timeouts = 0;
  h.denied = 2;
  EXPECT_NE(hook_problem(h, 500), "");
  EXPECT_NE(hook_problem(HookFigures{}, 500), "");  // no samples at all
}

}  // namespace bench
