// TLS on the raw TCP listener (server.tcp_tls): a client speaking TLS gets the
// same protocol inside it, a plain client is refused cleanly, and the cost of
// an idle TLS connection is measured. The certificate is made by the test
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
    spec.server_extra = "tls_cert = \"" + cert() + "\"\ntls_key = \"" + key() + "\"\ntcp_tls = true";
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
  // The WebSocket side sees the same channel.
  auto ws = connect_as(server_->http_port(), "ws-reader");
  ws->send(R"({"op":"history","ch":"chat:tls","after":0,"rid":1})");
  EXPECT_EQ(msg_seqs(ws->expect("history")), seq_range(1, 1));
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
  std::vector<std::unique_ptr<Client>> plain;
  for (int i = 0; i < kConns; ++i) {
    plain.push_back(connect_as(server_->http_port(), "idle-ws-" + std::to_string(i)));
  }
  const int64_t with_plain = rss_kib(server_->pid());
  const double tls_kib = double(with_tls - base) / kConns;
  const double plain_kib = double(with_plain - with_tls) / kConns;
  std::cout << "idle connection past hello: TLS TCP " << tls_kib << " KiB, plain WebSocket "
            << plain_kib << " KiB (RSS over " << kConns << " each)\n";
  EXPECT_LT(tls_kib, 64.0);
}

}  // namespace
}  // namespace parley::testing
