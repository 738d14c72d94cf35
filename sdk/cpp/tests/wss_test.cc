// wss:// through the default transport against the real server's TLS
// listener (`listen_tls = true`, docs/operations.md "TLS"), with a
// certificate the test makes (openssl CLI) for DNS:localhost only: trusted
// through DefaultTransportOptions::tls_ca_file it connects, joins, publishes
// and receives; with the system's CAs, for a host the certificate does not
// name, or with a CA file that does not load it never gets a welcome, and
// the drop says why. The server binary comes from PARLEY_SERVER_BIN (ctest
// sets it); without one the tests skip.
#include <gtest/gtest.h>
#include <parley/client.h>
#include <parley/default_transport.h>
#include <chrono>
#include <functional>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "server_process.h"

namespace parley::testing {
namespace {

using namespace std::chrono_literals;

// One TLS server for the whole suite: a fresh folder, a self-signed
// certificate for localhost, `parley serve` with its ports from the ready line.
class TlsServer {
 public:
  static TlsServer& get() {
    static TlsServer s;
    return s;
  }
  bool ok() const { return proc_.ok(); }
  const std::string& why() const { return proc_.why(); }
  int port() const { return proc_.port(); }
  std::string cert() const { return proc_.dir() + "/cert.pem"; }
  const std::string& dir() const { return proc_.dir(); }
  /// A client token minted by the server binary (`parley token`).
  std::string token(const std::string& user) const { return proc_.token(user); }

 private:
  TlsServer() : proc_("parley-cpp-wss", config) {}
  static std::string config(const std::string& dir, std::string& why) {
    const std::string cert = dir + "/cert.pem";
    const std::string gen = "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 "
                            "-subj /CN=localhost -addext subjectAltName=DNS:localhost -keyout " +
                            dir + "/key.pem -out " + cert + " >" + dir + "/openssl.log 2>&1";
    if (std::system(gen.c_str()) != 0) {
      why = "openssl req failed: " + slurp(dir + "/openssl.log");
      return "";
    }
    std::ostringstream c;
    c << "[server]\n"
      << "listen = \"127.0.0.1:0\"\n"
      << "tcp_listen = \"127.0.0.1:0\"\n"
      << "listen_tls = true\n"
      << "tls_cert = \"" << cert << "\"\n"
      << "tls_key = \"" << dir << "/key.pem\"\n"
      << "data_dir = \"" << dir << "/data\"\n"
      << "log_level = \"warn\"\n\n"
      << "[tenants.demo]\n"
      << "secret = \"sdk-cpp-wss-secret-0123456789abcdef\"\n"
      << "api_key = \"sdk-cpp-wss-key\"\n";
    return c.str();
  }

  ServerProcess proc_;
};

// A client on the default transport made with `tls`, polled until `done` or 10 s.
struct Probe {
  std::unique_ptr<Client> client;
  std::vector<Disconnect> drops;
  bool opened = false;

  Probe(const std::string& url, const DefaultTransportOptions& tls, const std::string& user) {
    ClientOptions o;
    o.url = url;
    o.token = TlsServer::get().token(user);
    o.transport = make_default_transport(tls);
    o.reconnect.min_ms = 5000;  // one attempt within a test
    o.reconnect.max_ms = 5000;
    client = std::make_unique<Client>(std::move(o));
    client->on_open([this](const Welcome&) { opened = true; });
    client->on_disconnect([this, url](const Disconnect& d) {
      std::cout << url << ": dropped, " << d.code << " " << d.reason << '\n';
      drops.push_back(d);
    });
    client->connect();
  }
  bool run_until(const std::function<bool()>& done, std::chrono::milliseconds limit = 10s) {
    const auto end = std::chrono::steady_clock::now() + limit;
    while (!done() && std::chrono::steady_clock::now() < end) client->poll(20ms);
    return done();
  }
};

#define NEED_SERVER()                                              \
  do {                                                             \
    if (!TlsServer::get().ok()) GTEST_SKIP() << TlsServer::get().why(); \
  } while (0)

TEST(Wss, TrustedThroughACaFileItPublishesAndReceives) {
  NEED_SERVER();
  const std::string url = "wss://localhost:" + std::to_string(TlsServer::get().port()) + "/v1/ws";
  DefaultTransportOptions tls;
  tls.tls_ca_file = TlsServer::get().cert();
  Probe p(url, tls, "wss-bot");
  Channel ch = p.client->channel("chat:wss");
  std::vector<int64_t> seqs, acks;
  ch.on_msg([&](const Message& m) { seqs.push_back(m.seq); });
  ch.join(
      [&](const Result<Joined>& r) {
        ASSERT_TRUE(r.ok()) << r.error().code;
        for (int i = 0; i < 5; i++) {
          ch.publish({{"i", i}}, [&](const Result<Ack>& a) {
            if (a.ok()) acks.push_back(a.value().seq);
          });
        }
      },
      0);
  ASSERT_TRUE(p.run_until([&] { return acks.size() == 5 && seqs.size() == 5; }))
      << "acks " << acks.size() << ", msgs " << seqs.size()
      << (p.drops.empty() ? std::string() : ", dropped: " + p.drops.back().reason);
  EXPECT_TRUE(p.opened);
  EXPECT_EQ(seqs, (std::vector<int64_t>{1, 2, 3, 4, 5}));
  EXPECT_EQ(acks, (std::vector<int64_t>{1, 2, 3, 4, 5}));
  EXPECT_TRUE(p.drops.empty());
  p.client->close();
}

// Verification is on by default: a self-signed certificate is refused.
TEST(Wss, TheSystemsCasDoNotTrustASelfSignedCertificate) {
  NEED_SERVER();
  const std::string url = "wss://localhost:" + std::to_string(TlsServer::get().port()) + "/v1/ws";
  Probe p(url, DefaultTransportOptions{}, "wss-untrusted");
  ASSERT_TRUE(p.run_until([&] { return !p.drops.empty(); }));
  EXPECT_FALSE(p.opened);
  EXPECT_EQ(p.drops[0].code, 1006);
  EXPECT_NE(p.drops[0].reason.find("certificate verify failed"), std::string::npos) << p.drops[0].reason;
  EXPECT_TRUE(p.drops[0].will_reconnect);
  p.client->close();
}

// The certificate names localhost only: the same server reached as 127.0.0.1 is refused.
TEST(Wss, ACertificateThatDoesNotNameTheHostIsRefused) {
  NEED_SERVER();
  const std::string url = "wss://127.0.0.1:" + std::to_string(TlsServer::get().port()) + "/v1/ws";
  DefaultTransportOptions tls;
  tls.tls_ca_file = TlsServer::get().cert();
  Probe p(url, tls, "wss-wrong-host");
  ASSERT_TRUE(p.run_until([&] { return !p.drops.empty(); }));
  EXPECT_FALSE(p.opened);
  EXPECT_NE(p.drops[0].reason.find("mismatch"), std::string::npos) << p.drops[0].reason;
  p.client->close();
}

TEST(Wss, ACaFileThatDoesNotLoadFailsTheConnectWithTheReason) {
  NEED_SERVER();
  const std::string url = "wss://localhost:" + std::to_string(TlsServer::get().port()) + "/v1/ws";
  DefaultTransportOptions tls;
  tls.tls_ca_file = "/nonexistent/ca.pem";
  Probe p(url, tls, "wss-no-ca");
  ASSERT_TRUE(p.run_until([&] { return !p.drops.empty(); }));
  EXPECT_FALSE(p.opened);
  EXPECT_NE(p.drops[0].reason.find("cannot load the CA file /nonexistent/ca.pem: No such file"), std::string::npos)
      << p.drops[0].reason;
  p.client->close();
}

TEST(Wss, ACaFileWithoutCertificatesFailsTheConnectWithTheReason) {
  NEED_SERVER();
  const std::string url = "wss://localhost:" + std::to_string(TlsServer::get().port()) + "/v1/ws";
  DefaultTransportOptions tls;
  tls.tls_ca_file = TlsServer::get().dir() + "/not-a-ca.pem";
  std::ofstream(tls.tls_ca_file) << "not a certificate\n";
  Probe p(url, tls, "wss-bad-ca");
  ASSERT_TRUE(p.run_until([&] { return !p.drops.empty(); }));
  EXPECT_FALSE(p.opened);
  EXPECT_NE(p.drops[0].reason.find("no PEM certificate"), std::string::npos) << p.drops[0].reason;
  p.client->close();
}

// A plain ws:// client on the TLS listener gets no answer in the clear.
TEST(Wss, PlainWebSocketOnTheTlsListenerIsDropped) {
  NEED_SERVER();
  const std::string url = "ws://127.0.0.1:" + std::to_string(TlsServer::get().port()) + "/v1/ws";
  Probe p(url, DefaultTransportOptions{}, "ws-on-tls");
  ASSERT_TRUE(p.run_until([&] { return !p.drops.empty(); }));
  EXPECT_FALSE(p.opened);
  p.client->close();
}

}  // namespace
}  // namespace parley::testing
