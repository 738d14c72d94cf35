#include "persister_process.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "support/server_process.h"

namespace parley::testing {

PersisterProcess::PersisterProcess(PersisterSpec spec) : spec_(std::move(spec)) {
  char tmpl[] = "/tmp/parley-persist-XXXXXX";
  dir_ = mkdtemp(tmpl) ? tmpl : "/tmp";
  std::ofstream cfg(dir_ + "/parley.toml");
  cfg << "[server]\nstore = \"valkey\"\nlog_level = \"info\"\n\n" << spec_.tenants_toml << "\n"
      << spec_.valkey_toml << "\n[postgres]\nurl = \"" << spec_.postgres_url << "\"\n"
      << "[persist]\nlisten = \"127.0.0.1:0\"\n" << spec_.persist_extra << "\n";
}

PersisterProcess::~PersisterProcess() {
  if (pid_ > 0) kill9();
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

void PersisterProcess::start() {
  int out[2];
  ASSERT_EQ(pipe(out), 0);
  const std::string log_path = dir_ + "/persist.log";
  pid_ = fork();
  ASSERT_GE(pid_, 0);
  if (pid_ == 0) {
    int log = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    dup2(out[1], 1);
    dup2(log, 2);
    close(out[0]);
    const std::string cfg = dir_ + "/parley.toml";
    const char* env_bin = std::getenv("PARLEY_TEST_BIN");
    const char* bin = env_bin && *env_bin ? env_bin : PARLEY_BIN;
    execl(bin, bin, "persist", "--config", cfg.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  close(out[1]);
  std::string line;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  bool ready = false;
  char c;
  while (std::chrono::steady_clock::now() < deadline) {
    if (read(out[0], &c, 1) <= 0) break;
    if (c != '\n') {
      line += c;
      continue;
    }
    unsigned h = 0;
    if (const char* at = strstr(line.c_str(), "parley persist ready http=");
        at && sscanf(at, "parley persist ready http=%u", &h) == 1) {
      http_port_ = static_cast<uint16_t>(h);
      ready = true;
      break;
    }
    line.clear();
  }
  const int fd = out[0];
  std::thread([fd, log_path] {
    std::ofstream log(log_path, std::ios::app);
    char buf[4096];
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0) log.write(buf, n).flush();
    close(fd);
  }).detach();
  ASSERT_TRUE(ready) << "persister did not start:\n" << log();
}

void PersisterProcess::kill9() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  waitpid(pid_, nullptr, 0);
  pid_ = -1;
}

void PersisterProcess::terminate() {
  if (pid_ > 0) ::kill(pid_, SIGTERM);
}

int PersisterProcess::wait_exit(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    int st;
    if (waitpid(pid_, &st, WNOHANG) == pid_) {
      pid_ = -1;
      return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return -1;
}

std::string PersisterProcess::log() const {
  std::ifstream f(dir_ + "/persist.log");
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

double PersisterProcess::metric(const std::string& name) const {
  std::string body;
  try {
    body = http_request(http_port_, "GET", "/metrics").body;
  } catch (const std::exception&) {
    return -1;  // not listening (yet, or any more)
  }
  std::istringstream in(body);
  std::string l;
  while (std::getline(in, l)) {
    if (l.size() > name.size() && l.compare(0, name.size(), name) == 0 && l[name.size()] == ' ') {
      return std::stod(l.substr(name.size() + 1));
    }
  }
  return -1;
}

}  // namespace parley::testing
