// TLS on the raw TCP listener (server.tcp_tls) and the main listener
// (server.listen_tls: wss and https): a client speaking TLS gets the same
// protocol inside it, a plain client is refused cleanly, and the cost of an
// idle TLS connection is measured. The certificate is made by the test
// (openssl CLI), trusted by the client as its only CA.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <thread>

#include "support/client.h"
#include "support/raw_ws.h"
#include "support/server_process.h"

namespace parley::testing {
namespace {

// A blocking TLS client of the raw TCP framing, on OpenSSL directly.
class TlsClient {
 public:
  static std::unique_ptr<TlsClient> connect(uint16_t port, const std::string& ca_file) {
    std::unique_ptr<TlsClient> c(new TlsClient());
    c->ctx_ = SSL_CTX_new(TLS_client_method());
    EXPECT_EQ(SSL_CTX_load_verify_locations(c->ctx_, ca_file.c_str(), nullptr), 1);
    SSL_CTX_set_verify(c->ctx_, SSL_VERIFY_PEER, nullptr);
    c->fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(c->fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) return nullptr;
    timeval tv{5, 0};
    setsockopt(c->fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    c->ssl_ = SSL_new(c->ctx_);
    SSL_set1_host(c->ssl_, "localhost");
    SSL_set_fd(c->ssl_, c->fd_);
    if (SSL_connect(c->ssl_) != 1) {
      ADD_FAILURE() << "TLS handshake failed: " << ERR_error_string(ERR_get_error(), nullptr);
      return nullptr;
    }
    return c;
  }
  ~TlsClient() {
    if (ssl_) SSL_free(ssl_);
    if (fd_ >= 0) ::close(fd_);
    if (ctx_) SSL_CTX_free(ctx_);
  }

  void send_raw(const std::string& bytes) {
    ASSERT_EQ(SSL_write(ssl_, bytes.data(), static_cast<int>(bytes.size())),
              static_cast<int>(bytes.size()));
  }
  // Appends what arrives to `in`; false on timeout or close.
  bool read_into(std::string& in) {
    char buf[16384];
    const int n = SSL_read(ssl_, buf, sizeof buf);
    if (n <= 0) return false;
    in.append(buf, static_cast<size_t>(n));
    return true;
  }

  void send(const std::string& json) {
    std::string frame;
    for (int i = 3; i >= 0; --i) frame.push_back(static_cast<char>((json.size() >> (8 * i)) & 0xFF));
    frame += json;
    ASSERT_EQ(SSL_write(ssl_, frame.data(), static_cast<int>(frame.size())),
              static_cast<int>(frame.size()));
  }

  // The next server object (tick arrays split), or "" on timeout / close.
  std::string next() {
    while (objects_.empty()) {
      if (in_.size() >= 4) {
        const uint32_t len = (uint32_t(uint8_t(in_[0])) << 24) | (uint32_t(uint8_t(in_[1])) << 16) |
                             (uint32_t(uint8_t(in_[2])) << 8) | uint32_t(uint8_t(in_[3]));
        if (in_.size() >= 4 + len) {
          for (auto& o : json_frame_objects(in_.substr(4, len))) objects_.push_back(o);
          in_.erase(0, 4 + len);
          continue;
        }
      }
      char buf[16384];
      const int n = SSL_read(ssl_, buf, sizeof buf);
      if (n <= 0) return "";
      in_.append(buf, static_cast<size_t>(n));
    }
    std::string o = objects_.front();
    objects_.erase(objects_.begin());
    return o;
  }
  std::string expect(const std::string& op) {
    for (int i = 0; i < 100; ++i) {
      auto o = next();
      if (o.empty() || op_of(o) == op) return o;
    }
    return "";
  }

 private:
  TlsClient() = default;
  SSL_CTX* ctx_ = nullptr;
  SSL* ssl_ = nullptr;
  int fd_ = -1;
  std::string in_;
  std::vector<std::string> objects_;
};

int64_t rss_kib(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6));
  }
  return -1;
}

class TlsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    char tmpl[] = "/tmp/parley-tls-XXXXXX";
    dir_ = new std::string(mkdtemp(tmpl));
    const std::string cmd = "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 "
                            "-nodes -days 1 -subj /CN=localhost -addext subjectAltName=DNS:localhost "
                            "-keyout " + key() + " -out " + cert() + " >/dev/null 2>&1";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    ServerSpec spec;
    spec.server_extra = "tls_cert = \"" + cert() + "\"\ntls_key = \"" + key() +
                        "\"\ntcp_tls = true\nlisten_tls = true";
    server_ = new ServerProcess(spec);
    server_->start();
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
    std::error_code ec;
    std::filesystem::remove_all(*dir_, ec);
    delete dir_;
  }
  static std::string cert() { return *dir_ + "/cert.pem"; }
  static std::string key() { return *dir_ + "/key.pem"; }

  static inline std::string* dir_ = nullptr;
  static inline ServerProcess* server_ = nullptr;
};

// A WebSocket client over TLS (wss), frames made with raw_ws.h.
class WssClient {
 public:
  static std::unique_ptr<WssClient> open(uint16_t port, const std::string& ca_file) {
    std::unique_ptr<WssClient> c(new WssClient());
    c->tls_ = TlsClient::connect(port, ca_file);
    if (!c->tls_) return nullptr;
    c->tls_->send_raw(RawWs::upgrade_request());
    while (c->in_.find("\r\n\r\n") == std::string::npos) {
      if (!c->tls_->read_into(c->in_)) return nullptr;
    }
    const auto end = c->in_.find("\r\n\r\n");
    c->status_line_ = c->in_.substr(0, c->in_.find("\r\n"));
    c->in_.erase(0, end + 4);
    return c;
  }
  const std::string& status_line() const { return status_line_; }
  void send(const std::string& json) { tls_->send_raw(encode_frame({ws_op::kText, json})); }
  // The next server object (tick arrays split), or "" on timeout / close.
  std::string next() {
    while (objects_.empty()) {
      if (in_.size() >= 2) {
        size_t len = static_cast<uint8_t>(in_[1]) & 0x7F, hdr = 2;
        if (len == 126 && in_.size() >= 4) {
          len = (size_t(uint8_t(in_[2])) << 8) | uint8_t(in_[3]);
          hdr = 4;
        } else if (len == 127 && in_.size() >= 10) {
          len = 0;
          for (int i = 0; i < 8; ++i) len = (len << 8) | uint8_t(in_[2 + i]);
          hdr = 10;
        }
        if ((len < 126 || hdr > 2) && in_.size() >= hdr + len) {
          const uint8_t opcode = static_cast<uint8_t>(in_[0]) & 0x0F;
          if (opcode == ws_op::kText) {
            for (auto& o : json_frame_objects(in_.substr(hdr, len))) objects_.push_back(o);
          }
          in_.erase(0, hdr + len);
          continue;
        }
      }
      if (!tls_->read_into(in_)) return "";
    }
    std::string o = objects_.front();
    objects_.erase(objects_.begin());
    return o;
  }
  std::string expect(const std::string& op) {
    for (int i = 0; i < 100; ++i) {
      auto o = next();
      if (o.empty() || op_of(o) == op) return o;
    }
    return "";
  }

 private:
  std::unique_ptr<TlsClient> tls_;
  std::string in_;
  std::string status_line_;
  std::vector<std::string> objects_;
};

TEST_F(TlsTest, TlsClientSaysHelloJoinsPublishesAndIsAcked) {
  auto c = TlsClient::connect(server_->tcp_port(), cert());
  ASSERT_TRUE(c);
  c->send(hello_frame(ServerProcess::token("tls-user")));
  auto w = c->next();
  EXPECT_EQ(op_of(w), "welcome") << w;
  c->send(join_frame("chat:tls", std::nullopt, 2));
  EXPECT_EQ(json_int(c->expect("joined"), "rid"), 2);
  c->send(pub_frame("chat:tls", "t1", R"({"secret":"over tls"})", 3));
  auto ack = c->expect("ack");
  EXPECT_EQ(json_int(ack, "seq"), 1) << ack;
  auto m = c->expect("msg");
  EXPECT_EQ(json_str(m, "from"), "tls-user") << m;
  c->send(R"({"op":"history","ch":"chat:tls","after":0,"rid":4})");
  EXPECT_EQ(msg_seqs(c->expect("history")), seq_range(1, 1));
}

TEST_F(TlsTest, LargeFramesCrossTlsRecordsBothWays) {
  auto c = TlsClient::connect(server_->tcp_port(), cert());
  ASSERT_TRUE(c);
  c->send(hello_frame(ServerProcess::token("tls-big")));
  ASSERT_EQ(op_of(c->next()), "welcome");
  c->send(join_frame("chat:tls-big", std::nullopt, 1));
  c->expect("joined");
  const std::string body = "\"" + std::string(60 * 1024, 'z') + "\"";
  for (int i = 0; i < 20; ++i) c->send(pub_frame("chat:tls-big", "b" + std::to_string(i), body, i));
  int msgs = 0;
  for (int i = 0; i < 200 && msgs < 20; ++i) {
    auto o = c->next();
    ASSERT_FALSE(o.empty()) << "after " << msgs << " msgs";
    if (op_of(o) == "msg") {
      EXPECT_EQ(json_raw(o, "body"), body);
      ++msgs;
    }
  }
  EXPECT_EQ(msgs, 20);
}

TEST_F(TlsTest, PlainClientOnTheTlsPortIsRefusedAndTheServerGoesOn) {
  auto plain = Client::connect(server_->tcp_port(), Wire::kTcp);
  plain->send(hello_frame(ServerProcess::token("plain")));
  EXPECT_FALSE(plain->next(3s).has_value()) << "a plain frame was answered in the clear";
  EXPECT_TRUE(plain->wait_closed(3s).has_value()) << "the plain connection stayed open";
  auto c = TlsClient::connect(server_->tcp_port(), cert());
  ASSERT_TRUE(c);
  c->send(hello_frame(ServerProcess::token("after-plain")));
  EXPECT_EQ(op_of(c->next()), "welcome");
}

TEST_F(TlsTest, WssClientSaysHelloJoinsPublishesAndIsAcked) {
  auto c = WssClient::open(server_->http_port(), cert());
  ASSERT_TRUE(c);
  EXPECT_EQ(c->status_line(), "HTTP/1.1 101 Switching Protocols");
  c->send(hello_frame(ServerProcess::token("wss-user")));
  EXPECT_EQ(op_of(c->next()), "welcome");
  c->send(join_frame("chat:wss", std::nullopt, 2));
  EXPECT_EQ(json_int(c->expect("joined"), "rid"), 2);
  c->send(pub_frame("chat:wss", "w1", R"({"over":"wss"})", 3));
  EXPECT_EQ(json_int(c->expect("ack"), "seq"), 1);
  auto m = c->expect("msg");
  EXPECT_EQ(json_str(m, "from"), "wss-user") << m;
  // And the TLS TCP side of the same server reads it back.
  auto t = TlsClient::connect(server_->tcp_port(), cert());
  ASSERT_TRUE(t);
  t->send(hello_frame(ServerProcess::token("tcp-reader")));
  ASSERT_EQ(op_of(t->next()), "welcome");
  t->send(R"({"op":"history","ch":"chat:wss","after":0,"rid":1})");
  EXPECT_EQ(msg_seqs(t->expect("history")), seq_range(1, 1));
}

TEST_F(TlsTest, WssClientMayPipelineItsHelloBehindTheUpgrade) {
  // The hello rides in the same TLS records as the upgrade request: it is
  // already decrypted (or buffered) when the WebSocket takes over.
  auto tls = TlsClient::connect(server_->http_port(), cert());
  ASSERT_TRUE(tls);
  tls->send_raw(RawWs::upgrade_request() +
                encode_frame({ws_op::kText, hello_frame(ServerProcess::token("pipelined"))}));
  std::string in;
  while (in.find("welcome") == std::string::npos) {
    ASSERT_TRUE(tls->read_into(in)) << in;
  }
}

TEST_F(TlsTest, HttpsApiIsServed) {
  auto tls = TlsClient::connect(server_->http_port(), cert());
  ASSERT_TRUE(tls);
  tls->send_raw("GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
  std::string in;
  while (tls->read_into(in)) {
  }
  EXPECT_EQ(in.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << in;
}

TEST_F(TlsTest, PlainHttpOnTheTlsListenerIsRefused) {
  auto plain = RawWs::connect(server_->http_port());
  EXPECT_FALSE(plain->http(RawWs::upgrade_request(), 3s).has_value());
  auto c = WssClient::open(server_->http_port(), cert());
  ASSERT_TRUE(c);
  EXPECT_EQ(c->status_line(), "HTTP/1.1 101 Switching Protocols");
}

TEST_F(TlsTest, IdleTlsConnectionCostIsMeasured) {
  // RSS per idle connection past hello, TLS vs a plain WebSocket, 300 each.
  constexpr int kConns = 300;
  const int64_t base = rss_kib(server_->pid());
  std::vector<std::unique_ptr<TlsClient>> tls;
  for (int i = 0; i < kConns; ++i) {
    tls.push_back(TlsClient::connect(server_->tcp_port(), cert()));
    ASSERT_TRUE(tls.back());
    tls.back()->send(hello_frame(ServerProcess::token("idle-tls-" + std::to_string(i))));
    ASSERT_EQ(op_of(tls.back()->next()), "welcome");
  }
  const int64_t with_tls = rss_kib(server_->pid());
  std::vector<std::unique_ptr<WssClient>> wss;
  for (int i = 0; i < kConns; ++i) {
    wss.push_back(WssClient::open(server_->http_port(), cert()));
    ASSERT_TRUE(wss.back());
    wss.back()->send(hello_frame(ServerProcess::token("idle-wss-" + std::to_string(i))));
    ASSERT_EQ(op_of(wss.back()->next()), "welcome");
  }
  const int64_t with_wss = rss_kib(server_->pid());
  const double tls_kib = double(with_tls - base) / kConns;
  const double wss_kib = double(with_wss - with_tls) / kConns;
  std::cout << "idle connection past hello: TLS TCP " << tls_kib << " KiB, wss " << wss_kib
            << " KiB (RSS over " << kConns << " each)\n";
  EXPECT_LT(tls_kib, 64.0);
  EXPECT_LT(wss_kib, 64.0);
}

}  // namespace
}  // namespace parley::testing
