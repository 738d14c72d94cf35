// The MessagePack codec against hand-written bytes (PROTOCOL.md's mapping and
// docs/protocol-notes.md's bounds), and the client's choice of encoding per
// transport: subprotocol and binary hello on a WebSocket, JSON hello with
// `enc` on raw TCP and MessagePack only after a welcome that carries it.
#include <gtest/gtest.h>
#include <parley/client.h>
#include <parley/codec.h>

#include <string>
#include <vector>

namespace parley {
namespace {

std::string bytes(std::initializer_list<int> b) {
  std::string s;
  for (int c : b) s += static_cast<char>(c);
  return s;
}

// fixstr
std::string s(const std::string& v) { return static_cast<char>(0xa0 | v.size()) + v; }

TEST(MsgpackCodec, DecodesAMapAndABatchWithBinBodies) {
  std::vector<Json> out;
  // {"op":"msg","seq":7 (as a non-shortest uint32),"body":{"b":bin[0,1,255],"f":float32 0.5}}
  const std::string one = bytes({0x83}) + s("op") + s("msg") + s("seq") + bytes({0xce, 0, 0, 0, 7}) + s("body") +
                          bytes({0x82}) + s("b") + bytes({0xc4, 3, 0, 1, 255}) + s("f") +
                          bytes({0xca, 0x3f, 0, 0, 0});
  ASSERT_TRUE(msgpack_codec()->decode(one, out));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0]["seq"], 7);
  EXPECT_EQ(out[0]["body"]["b"], Json({{"$bin", "AAH/"}}));
  EXPECT_EQ(out[0]["body"]["f"], 0.5);
  EXPECT_TRUE(out[0]["body"]["f"].is_number_float());
  // A batch: an array of two maps; the body a bin itself.
  const std::string two = bytes({0x92, 0x82}) + s("op") + s("msg") + s("body") + bytes({0xc4, 1, 9}) +
                          bytes({0x81}) + s("op") + s("pong");
  ASSERT_TRUE(msgpack_codec()->decode(two, out));
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[1]["body"], Json({{"$bin", "CQ=="}}));
  EXPECT_EQ(out[2]["op"], "pong");
}

TEST(MsgpackCodec, RefusesWhatTheMappingRefuses) {
  const std::string op = bytes({0x81}) + s("op") + s("msg");
  const std::vector<std::pair<const char*, std::string>> bad = {
      {"empty", ""},
      {"trailing bytes", op + bytes({0xc0})},
      {"0xc1", bytes({0x81}) + s("op") + bytes({0xc1})},
      {"truncated", op.substr(0, op.size() - 1)},
      {"ext", bytes({0x81}) + s("body") + bytes({0xd4, 1, 0})},
      {"ext in a body's map", bytes({0x81}) + s("body") + bytes({0x81}) + s("x") + bytes({0xc7, 1, 5, 0})},
      {"int key", bytes({0x81, 0x01, 0x02})},
      {"invalid UTF-8", bytes({0x81}) + s("op") + bytes({0xa2, 0xc3, 0x28})},
      {"invalid UTF-8 key", bytes({0x81, 0xa1, 0xff}) + s("x")},
      {"surrogate", bytes({0x81}) + s("op") + bytes({0xa3, 0xed, 0xa0, 0x80})},
      {"NaN", bytes({0x81}) + s("body") + bytes({0xcb, 0x7f, 0xf8, 0, 0, 0, 0, 0, 0})},
      {"infinity", bytes({0x81}) + s("body") + bytes({0xca, 0x7f, 0x80, 0, 0})},
      {"bin outside a body", bytes({0x81}) + s("id") + bytes({0xc4, 1, 0})},
      {"top-level int", bytes({0x07})},
      {"top-level str", s("msg")},
      {"batch of ints", bytes({0x92, 0x01, 0x02})},
      {"declared array count past the end", bytes({0x81}) + s("body") + bytes({0xdd, 0xff, 0xff, 0xff, 0xff, 0xc0})},
      {"declared str length past the end", bytes({0x81}) + s("op") + bytes({0xdb, 0xff, 0xff, 0xff, 0xff, 'a'})},
      {"declared map count past the end", bytes({0xdf, 0xff, 0xff, 0xff, 0xff}) + s("a") + bytes({0xc0})},
  };
  for (const auto& [why, frame] : bad) {
    std::vector<Json> out;
    EXPECT_FALSE(msgpack_codec()->decode(frame, out)) << why;
    EXPECT_TRUE(out.empty()) << why;
  }
}

TEST(MsgpackCodec, BoundsDepthWithoutRecursingPastIt) {
  // {"body": [[[[...]]]]}: 1,022 arrays in a body are fine; 200,000 are refused.
  auto nested = [](std::size_t n) {
    return bytes({0x81}) + s("body") + std::string(n, static_cast<char>(0x91)) + bytes({0xc0});
  };
  std::vector<Json> out;
  EXPECT_TRUE(msgpack_codec()->decode(nested(1021), out));
  EXPECT_FALSE(msgpack_codec()->decode(nested(200000), out));
  EXPECT_EQ(out.size(), 1u);
}

// Random bytes, and every prefix and one-byte change of a valid frame: each is
// decoded or refused, never a crash (ASan / UBSan builds catch the rest).
TEST(MsgpackCodec, RandomAndMutatedFramesAreDecodedOrRefused) {
  std::string valid;
  ASSERT_TRUE(msgpack_codec()->encode({{"op", "msg"}, {"seq", 70000}, {"ch", "c"},
                                       {"body", {{"b", make_bin("\x01\x02\x03")}, {"f", 2.5}, {"a", {1, -1, nullptr}}}}},
                                      valid));
  std::vector<Json> out;
  std::size_t decoded = 0;
  for (std::size_t n = 0; n <= valid.size(); ++n) decoded += msgpack_codec()->decode(valid.substr(0, n), out);
  EXPECT_EQ(decoded, 1u);  // only the whole frame
  for (std::size_t i = 0; i < valid.size(); ++i) {
    for (int b = 0; b < 256; b += 7) {
      std::string m = valid;
      m[i] = static_cast<char>(b);
      out.clear();
      msgpack_codec()->decode(m, out);
    }
  }
  uint64_t x = 88172645463325252ull;
  for (int k = 0; k < 20000; ++k) {
    std::string r(1 + k % 48, '\0');
    for (char& c : r) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      c = static_cast<char>(x);
    }
    out.clear();
    msgpack_codec()->decode(r, out);
  }
}

TEST(MsgpackCodec, EncodesBinOnlyForACanonicalDollarBinInABody) {
  const Json frame = {{"op", "pub"},
                      {"ch", "c"},
                      {"id", Json{{"$bin", "AAE="}}},  // not a body: stays an object
                      {"body",
                       {{"data", {{"$bin", "AAE="}}},
                        {"loose", {{"$bin", "AAE"}}},
                        {"odd", {{"$bin", "AAF="}}},
                        {"two", {{"$bin", "AA=="}, {"x", 1}}},
                        {"n", -200},
                        {"big", 9007199254740993ull},
                        {"f", 1.0},
                        {"list", {1, "two", nullptr, true}}}}};
  std::string wire;
  ASSERT_TRUE(msgpack_codec()->encode(frame, wire));
  // The canonical one went out as bin 0x00 0x01.
  EXPECT_NE(wire.find(bytes({0xc4, 2, 0, 1})), std::string::npos);
  std::vector<Json> back;
  ASSERT_TRUE(msgpack_codec()->decode(wire, back));
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0], frame);  // the application sees the body it sent; the id stayed an object
  EXPECT_TRUE(back[0]["body"]["f"].is_number_float());
  EXPECT_EQ(back[0]["body"]["big"], 9007199254740993ull);

  std::string raw;
  EXPECT_TRUE(read_bin(make_bin(std::string("\x00\x01\xff", 3)), raw));
  EXPECT_EQ(raw, std::string("\x00\x01\xff", 3));
  EXPECT_FALSE(read_bin(Json{{"$bin", "AAF="}}, raw));
}

// A transport that records what the client asked for and sent.
struct Wire : Transport, Connection {
  ConnectionHandler* h = nullptr;
  std::string subprotocol;
  std::vector<std::pair<std::string, bool>> sent;
  std::unique_ptr<Connection> connect(const std::string&, const ConnectOptions& o, ConnectionHandler& handler) override {
    h = &handler;
    subprotocol = o.subprotocol;
    struct Ref : Connection {
      Wire* w;
      void send(std::string f, bool b) override { w->send(std::move(f), b); }
      void close(int c, std::string_view r) override {}
    };
    auto r = std::make_unique<Ref>();
    r->w = this;
    return r;
  }
  void poll(std::chrono::milliseconds) override {}
  void send(std::string f, bool b) override { sent.emplace_back(std::move(f), b); }
  void close(int, std::string_view) override {}
};

Json sent_as(const std::pair<std::string, bool>& f) {
  std::vector<Json> v;
  if (f.second) {
    // Our decoder reads server frames; a client frame is a map too.
    EXPECT_TRUE(msgpack_codec()->decode(f.first, v));
  } else {
    EXPECT_TRUE(json_codec()->decode(f.first, v));
  }
  return v.empty() ? Json() : v[0];
}

// A MessagePack client of `url` on the scripted wire `w`.
ClientOptions msgpack_options(const std::string& url, std::shared_ptr<Wire> w) {
  ClientOptions o;
  o.url = url;
  o.token = "T";
  o.transport = std::move(w);
  o.codec = msgpack_codec();
  return o;
}

TEST(MsgpackClient, WebSocketOffersTheSubprotocolAndSaysHelloInMsgpack) {
  auto w = std::make_shared<Wire>();
  Client c(msgpack_options("ws://h/v1/ws", w));
  std::string enc;
  c.on_open([&](const Welcome& wl) { enc = wl.enc; });
  c.connect();
  c.poll();
  EXPECT_EQ(w->subprotocol, "parley.v1.msgpack");
  w->h->on_open();
  ASSERT_EQ(w->sent.size(), 1u);
  EXPECT_TRUE(w->sent[0].second);
  const Json hello = sent_as(w->sent[0]);
  EXPECT_EQ(hello["op"], "hello");
  EXPECT_FALSE(hello.contains("enc"));  // the subprotocol decides
  std::string welcome;
  ASSERT_TRUE(msgpack_codec()->encode({{"op", "welcome"}, {"rid", hello["rid"]}, {"conn", "c1"}, {"enc", "msgpack"}},
                                      welcome));
  w->h->on_frame(welcome);
  c.poll();
  EXPECT_EQ(enc, "msgpack");
}

TEST(MsgpackClient, TcpSaysHelloInJsonAndSwitchesAfterTheWelcome) {
  auto w = std::make_shared<Wire>();
  Client c(msgpack_options("tcp://h:1", w));
  std::string enc;
  c.on_open([&](const Welcome& wl) { enc = wl.enc; });
  c.connect();
  c.poll();
  EXPECT_EQ(w->subprotocol, "");
  w->h->on_open();
  ASSERT_EQ(w->sent.size(), 1u);
  EXPECT_FALSE(w->sent[0].second);
  Json hello = sent_as(w->sent[0]);
  EXPECT_EQ(hello["enc"], "msgpack");
  // A server without MessagePack: bad_request, still JSON; the client says hello again without enc.
  w->h->on_frame(Json({{"op", "error"}, {"rid", hello["rid"]}, {"code", "bad_request"}, {"msg", "unsupported enc"}}).dump());
  ASSERT_EQ(w->sent.size(), 2u);
  hello = sent_as(w->sent[1]);
  EXPECT_FALSE(hello.contains("enc"));
  w->h->on_frame(Json({{"op", "welcome"}, {"rid", hello["rid"]}, {"conn", "c1"}}).dump());
  c.poll();
  EXPECT_EQ(enc, "json");
  c.ping([](const Result<int64_t>&) {});
  c.poll();
  ASSERT_EQ(w->sent.size(), 3u);
  EXPECT_FALSE(w->sent[2].second);
}

TEST(MsgpackClient, TcpWelcomeWithEncSwitchesBothDirections) {
  auto w = std::make_shared<Wire>();
  Client c(msgpack_options("tcp://h:1", w));
  std::vector<std::string> errors;
  c.on_error([&](const Error& e) { errors.push_back(e.code); });
  c.connect();
  c.poll();
  w->h->on_open();
  const Json hello = sent_as(w->sent[0]);
  w->h->on_frame(Json({{"op", "welcome"}, {"rid", hello["rid"]}, {"conn", "c1"}, {"enc", "msgpack"}}).dump());
  c.poll();
  c.ping([](const Result<int64_t>&) {});
  c.poll();
  ASSERT_EQ(w->sent.size(), 2u);
  EXPECT_TRUE(w->sent[1].second);
  EXPECT_EQ(sent_as(w->sent[1])["op"], "ping");
  // Now a JSON frame is malformed input: reported, not a crash.
  w->h->on_frame(R"({"op":"pong"})");
  c.poll();
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0], "bad_frame");
}

}  // namespace
}  // namespace parley
