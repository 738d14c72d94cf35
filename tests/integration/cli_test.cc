// The `parley` command line: a bad argument or configuration is a clear
// message on stderr and exit code 2, never an uncaught exception (which would
// abort with SIGABRT); check-config validates a file without starting anything.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <iterator>
#include <filesystem>
#include <fstream>
#include <string>

#include "support/server_process.h"

namespace parley::testing {
namespace {

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/parley-cli-XXXXXX";
    dir_ = mkdtemp(tmpl);
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  // A config file with this [server] section body and the default tenants.
  std::string config(const std::string& server_body, const std::string& tenants =
                                                         default_tenants_toml()) {
    const std::string path = dir_ + "/parley.toml";
    std::ofstream(path) << "[server]\n" << server_body << "\ndata_dir = \"" << dir_
                        << "/data\"\n\n" << tenants;
    return path;
  }
  std::string dir_;
};

TEST_F(CliTest, TokenWithANonNumericTtlExits2AndSaysWhy) {
  auto r = run_parley("token --tenant demo --user alice --ttl abc");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--ttl must be a whole number"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("\"abc\""), std::string::npos) << r.output;
}

TEST_F(CliTest, TokenWithAnOutOfRangeTtlExits2) {
  for (const char* ttl : {"0", "-5", "99999999999999999999", "12x", "1e3"}) {
    auto r = run_parley(std::string("token --tenant demo --user alice --ttl ") + ttl);
    EXPECT_EQ(r.exit_code, 2) << ttl << ": " << r.output;
    EXPECT_NE(r.output.find("--ttl must be a whole number"), std::string::npos) << r.output;
  }
}

TEST_F(CliTest, AFlagWithoutItsValueExits2) {
  auto r = run_parley("token --tenant demo --user alice --ttl");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--ttl needs a value"), std::string::npos) << r.output;
  r = run_parley("serve --config");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--config needs a value"), std::string::npos) << r.output;
}

TEST_F(CliTest, MissingRequiredFlagsAndUnknownArgumentsExit2) {
  auto r = run_parley("token --tenant demo");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--user is required"), std::string::npos) << r.output;
  r = run_parley("token --tenant demo --user alice --colour blue");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("unknown argument \"--colour\""), std::string::npos) << r.output;
  r = run_parley("frobnicate");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("unknown command \"frobnicate\""), std::string::npos) << r.output;
  r = run_parley("");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("usage:"), std::string::npos) << r.output;
}

TEST_F(CliTest, TokenWithGoodArgumentsPrintsAJwt) {
  auto r = run_parley("token --tenant demo --user alice --ttl 60 --chans 'chat:*'");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '.'), 2) << r.output;
}

TEST_F(CliTest, ServeWithAnUnreadableConfigExits2) {
  auto r = run_parley("serve --config " + dir_ + "/missing.toml");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("cannot read config file"), std::string::npos) << r.output;
}

TEST_F(CliTest, ServeRefusesAHostNameListenBeforeStarting) {
  auto r = run_parley("serve --config " + config("listen = \"example.com:0\""));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("server.listen"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("parley ready"), std::string::npos) << r.output;
}

TEST_F(CliTest, CheckConfigAcceptsAGoodFile) {
  auto r = run_parley("check-config " + config("listen = \"127.0.0.1:0\"\ntcp_listen = \"[::1]:0\""));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find(": ok (2 tenants)"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/data")) << "check-config must start nothing";
}

TEST_F(CliTest, CheckConfigNamesTheBadKey) {
  struct Case {
    std::string server_body;
    std::string key;
  };
  for (const Case& c : {Case{"threads = \"four\"", "server.threads"},
                        Case{"listen = \"example.com:7700\"", "server.listen"},
                        Case{"tcp_listen = \"127.0.0.1:99999\"", "server.tcp_listen"},
                        Case{"lisen = \"127.0.0.1:0\"", "server.lisen"}}) {
    auto r = run_parley("check-config " + config(c.server_body));
    EXPECT_EQ(r.exit_code, 2) << c.server_body << ": " << r.output;
    EXPECT_NE(r.output.find(c.key), std::string::npos) << c.server_body << ": " << r.output;
  }
  auto r = run_parley("check-config " + config("", "[tenants.demo]\nsecret = \"short\"\napi_key = \"k\"\n"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("tenants.demo.secret"), std::string::npos) << r.output;
}

// Issue 22: check-config reported only the first problem of a file.
TEST_F(CliTest, CheckConfigReportsEveryProblemOnALineOfItsOwn) {
  const std::string path = config("threads = \"four\"\nlisen = \"127.0.0.1:0\"",
                                  "[tenants.demo]\nsecret = \"short\"\napi_key = \"k\"\n"
                                  "[valkey]\npartitions = 0\n");
  auto r = run_parley("check-config " + path);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  for (const char* key : {"server.threads", "server.lisen", "tenants.demo.secret", "valkey.partitions"}) {
    EXPECT_NE(r.output.find("parley: " + path + ": "), std::string::npos) << r.output;
    const size_t at = r.output.find(key);
    ASSERT_NE(at, std::string::npos) << key << " in " << r.output;
    // On its own line, which names the file.
    const size_t line = r.output.rfind('\n', at);
    EXPECT_EQ(r.output.compare(line == std::string::npos ? 0 : line + 1, 8 + path.size() + 2,
                               "parley: " + path + ": "), 0) << r.output;
  }
  EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 4) << r.output;
}

// Issue 22: `parley persist --help` (any command's) exited 2 "unknown argument".
TEST_F(CliTest, EveryCommandPrintsItsUsageOnStdoutForHelp) {
  const std::string out = dir_ + "/stdout";
  for (const std::string cmd : {"serve", "token", "check-config", "persist", "reload", "verify-data", "version"}) {
    for (const std::string flag : {"--help", "-h"}) {
      auto r = run_parley(cmd + " " + flag + " >" + out);
      EXPECT_EQ(r.exit_code, 0) << cmd << " " << flag << ": " << r.output;
      EXPECT_EQ(r.output, "") << cmd << " " << flag << ": stderr must stay empty";
      std::ifstream f(out);
      const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
      EXPECT_EQ(text.rfind("usage:\n  parley " + cmd, 0), 0u) << cmd << " " << flag << ": " << text;
    }
  }
  for (const std::string flag : {"--help", "-h", "help"}) {
    auto r = run_parley(flag + " >" + out);
    EXPECT_EQ(r.exit_code, 0) << flag << ": " << r.output;
    std::ifstream f(out);
    const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    for (const char* cmd : {"serve", "token", "check-config", "persist", "reload", "verify-data", "version"}) {
      EXPECT_NE(text.find(std::string("  parley ") + cmd), std::string::npos) << flag << ": " << text;
    }
  }
  // Still a usage error without a command.
  EXPECT_EQ(run_parley("").exit_code, 2);
}

// One version of the build (CMake's project) and one of the protocol.
TEST_F(CliTest, VersionNamesTheBuildAndTheProtocol) {
  auto r = run_parley("version");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output, std::string("parley ") + PARLEY_PROJECT_VERSION + " (protocol v1)\n");
  EXPECT_EQ(run_parley("--version").output, r.output);
}

TEST_F(CliTest, CheckConfigWithoutAFileExits2) {
  auto r = run_parley("check-config");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("check-config takes one argument"), std::string::npos) << r.output;
  r = run_parley("check-config " + dir_ + "/missing.toml");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("cannot read config file"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace parley::testing
