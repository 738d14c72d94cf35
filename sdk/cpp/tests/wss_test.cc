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
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <functional>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace parley::testing {
namespace {

using namespace std::chrono_literals;

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// One TLS server for the whole suite: a fresh folder, a self-signed
// certificate for localhost, `parley serve` with its ports from the ready line.
class TlsServer {
 public:
  static TlsServer& get() {
    static TlsServer s;
    return s;
  }
  bool ok() const { return !why_.empty() ? false : port_ > 0; }
  const std::string& why() const { return why_; }
  int port() const { return port_; }
  std::string cert() const { return dir_ + "/cert.pem"; }
  const std::string& dir() const { return dir_; }

  /// A client token minted by the server binary (`parley token`).
  std::string token(const std::string& user) const {
    const std::string cmd = bin_ + " token --config " + dir_ + "/parley.toml --tenant demo --user " + user +
                            " --ttl 3600";
    FILE* p = popen(cmd.c_str(), "r");
    if (!p) return "";
    char buf[4096];
    std::string out;
    while (fgets(buf, sizeof buf, p)) out += buf;
    pclose(p);
    while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
    return out;
  }

  ~TlsServer() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (!dir_.empty()) std::system(("rm -rf " + dir_).c_str());
  }

 private:
  TlsServer() {
    const char* bin = std::getenv("PARLEY_SERVER_BIN");
    if (!bin || !*bin || access(bin, X_OK) != 0) {
      why_ = "no server binary (PARLEY_SERVER_BIN)";
      return;
    }
    bin_ = bin;
    char tmpl[] = "/tmp/parley-cpp-wss-XXXXXX";
    if (!mkdtemp(tmpl)) {
      why_ = "mkdtemp failed";
      return;
    }
    dir_ = tmpl;
    const std::string gen = "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 "
                            "-subj /CN=localhost -addext subjectAltName=DNS:localhost -keyout " +
                            dir_ + "/key.pem -out " + cert() + " >" + dir_ + "/openssl.log 2>&1";
    if (std::system(gen.c_str()) != 0) {
      why_ = "openssl req failed: " + slurp(dir_ + "/openssl.log");
      return;
    }
    std::ofstream(dir_ + "/parley.toml") << "[server]\n"
                                         << "listen = \"127.0.0.1:0\"\n"
                                         << "tcp_listen = \"127.0.0.1:0\"\n"
                                         << "listen_tls = true\n"
                                         << "tls_cert = \"" << cert() << "\"\n"
                                         << "tls_key = \"" << dir_ << "/key.pem\"\n"
                                         << "data_dir = \"" << dir_ << "/data\"\n"
                                         << "log_level = \"warn\"\n\n"
                                         << "[tenants.demo]\n"
                                         << "secret = \"sdk-cpp-wss-secret-0123456789abcdef\"\n"
                                         << "api_key = \"sdk-cpp-wss-key\"\n";
    const std::string log = dir_ + "/server.log";
    const std::string config = dir_ + "/parley.toml";
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    std::vector<std::string> args = {bin_, "serve", "--config", config};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    const int rc = posix_spawn(&pid_, bin_.c_str(), &fa, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) {
      why_ = "cannot start " + bin_;
      pid_ = -1;
      return;
    }
    const std::regex ready("parley ready http=([0-9]+)");
    for (int i = 0; i < 400; i++) {
      std::smatch m;
      const std::string text = slurp(log);
      if (std::regex_search(text, m, ready)) {
        port_ = std::stoi(m[1]);
        return;
      }
      if (waitpid(pid_, nullptr, WNOHANG) == pid_) {
        pid_ = -1;
        why_ = "the server exited before it was ready: " + text;
        return;
      }
      std::this_thread::sleep_for(25ms);
    }
    why_ = "the server was not ready within 10 s: " + slurp(log);
  }

  std::string bin_;
  std::string dir_;
  std::string why_;
  pid_t pid_ = -1;
  int port_ = 0;
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
