// The real server for the SDK's tests against it: PARLEY_SERVER_BIN (ctest sets
// it) run as `parley serve` on a config the test writes into a fresh folder, its
// HTTP port read from the ready line. Without a binary, or when it does not get
// ready, ok() is false and why() says why (the tests skip or fail with it).
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace parley::testing {

inline std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A shell command's output, its last line break dropped.
inline std::string run(const std::string& cmd) {
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return "";
  char buf[4096];
  std::string out;
  while (fgets(buf, sizeof buf, p)) out += buf;
  pclose(p);
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

class ServerProcess {
 public:
  // `prepare(dir)` writes what the config needs (a certificate, say) and returns
  // the config's text, or an empty string with `why` set when it cannot.
  using Prepare = std::function<std::string(const std::string& dir, std::string& why)>;

  ServerProcess(const std::string& folder_prefix, const Prepare& prepare) {
    const char* bin = std::getenv("PARLEY_SERVER_BIN");
    if (!bin || !*bin || access(bin, X_OK) != 0) {
      why_ = "no server binary (PARLEY_SERVER_BIN)";
      return;
    }
    bin_ = bin;
    std::string tmpl = "/tmp/" + folder_prefix + "-XXXXXX";
    if (!mkdtemp(tmpl.data())) {
      why_ = "mkdtemp failed";
      return;
    }
    dir_ = tmpl;
    const std::string config = prepare(dir_, why_);
    if (config.empty()) return;
    std::ofstream(dir_ + "/parley.toml") << config;
    start();
  }
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;
  ~ServerProcess() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (!dir_.empty()) std::system(("rm -rf " + dir_).c_str());
  }

  bool ok() const { return why_.empty() && port_ > 0; }
  const std::string& why() const { return why_; }
  int port() const { return port_; }
  const std::string& dir() const { return dir_; }

  // A client token minted by the server binary (`parley token`) for tenant demo.
  std::string token(const std::string& user) const {
    return run(bin_ + " token --config " + dir_ + "/parley.toml --tenant demo --user " + user + " --ttl 3600");
  }

 private:
  void start() {
    using namespace std::chrono_literals;
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

}  // namespace parley::testing
