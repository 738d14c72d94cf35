// server.log_format = "json": every line the real binary writes to stdout and
// stderr, from start through a drain, is one JSON object with the fixed keys
// ts, level, msg, thread in that order (docs/operations.md "Logs").
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <simdjson.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "support/client.h"
#include "support/server_process.h"

namespace parley::testing {
namespace {

using namespace std::chrono_literals;

// Reads a whole pipe on a thread, so the server never blocks on it.
class PipeReader {
 public:
  explicit PipeReader(int fd) : thread_([this, fd] {
      char buf[4096];
      ssize_t n;
      while ((n = read(fd, buf, sizeof buf)) > 0) {
        std::lock_guard lock(mu_);
        text_.append(buf, static_cast<size_t>(n));
      }
      close(fd);
    }) {}
  ~PipeReader() { if (thread_.joinable()) thread_.join(); }
  void join() { thread_.join(); }
  std::string text() {
    std::lock_guard lock(mu_);
    return text_;
  }

 private:
  std::mutex mu_;
  std::string text_;
  std::thread thread_;
};

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

TEST(LogFormat, JsonWritesOneObjectPerLineWithFixedKeys) {
  char tmpl[] = "/tmp/parley-logtest-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  {
    std::ofstream cfg(dir + "/parley.toml");
    cfg << "[server]\nlisten = \"127.0.0.1:0\"\nstore = \"embedded\"\ndata_dir = \"" << dir
        << "/data\"\nlog_level = \"debug\"\nlog_format = \"json\"\n\n" << default_tenants_toml();
  }
  int out[2], err[2];
  ASSERT_EQ(pipe(out), 0);
  ASSERT_EQ(pipe(err), 0);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    dup2(out[1], 1);
    dup2(err[1], 2);
    close(out[0]);
    close(err[0]);
    const std::string cfg = dir + "/parley.toml";
    execl(PARLEY_BIN, PARLEY_BIN, "serve", "--config", cfg.c_str(), nullptr);
    _exit(127);
  }
  close(out[1]);
  close(err[1]);
  PipeReader stdout_reader(out[0]), stderr_reader(err[0]);

  simdjson::dom::parser parser;
  // The ready record carries the port as a field.
  int64_t http_port = 0;
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (http_port == 0 && std::chrono::steady_clock::now() < deadline) {
    for (const auto& line : lines_of(stdout_reader.text())) {
      simdjson::dom::object obj;
      if (parser.parse(line).get(obj) != simdjson::SUCCESS) continue;
      std::string_view msg;
      if (obj["msg"].get(msg) == simdjson::SUCCESS && msg.starts_with("parley ready")) {
        ASSERT_EQ(obj["http"].get(http_port), simdjson::SUCCESS) << line;
      }
    }
    std::this_thread::sleep_for(20ms);
  }
  ASSERT_GT(http_port, 0) << stdout_reader.text() << stderr_reader.text();

  // Some traffic, over WebSocket and HTTP, so the server runs its paths.
  auto c = connect_as(static_cast<uint16_t>(http_port), "alice");
  c->join("chat:lobby");
  c->send(pub_frame("chat:lobby", "m1", R"({"t":"caf\u00e9 \"x\""})", 9));
  ASSERT_FALSE(c->expect("ack").empty());
  EXPECT_EQ(http_request(static_cast<uint16_t>(http_port), "GET", "/healthz").status, 200);
  c.reset();

  ASSERT_EQ(kill(pid, SIGTERM), 0);
  int st = 0;
  ASSERT_EQ(waitpid(pid, &st, 0), pid);
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << st;
  stdout_reader.join();
  stderr_reader.join();

  std::vector<std::string> all = lines_of(stdout_reader.text());
  for (auto& l : lines_of(stderr_reader.text())) all.push_back(l);
  std::vector<std::string> msgs;
  for (const auto& line : all) {
    simdjson::dom::object obj;
    ASSERT_EQ(parser.parse(line).get(obj), simdjson::SUCCESS) << "not JSON: " << line;
    std::vector<std::string_view> keys;
    for (auto field : obj) keys.push_back(field.key);
    ASSERT_GE(keys.size(), 4u) << line;
    EXPECT_EQ(keys[0], "ts");
    EXPECT_EQ(keys[1], "level");
    EXPECT_EQ(keys[2], "msg");
    EXPECT_EQ(keys[3], "thread");
    std::string_view ts = obj["ts"];
    EXPECT_EQ(ts.size(), 24u) << ts;  // 2026-11-30T15:39:29.123Z
    EXPECT_EQ(ts.back(), 'Z');
    msgs.emplace_back(std::string_view(obj["msg"]));
  }
  // Start, ready, the signal and the end of the drain are all there.
  auto has = [&](std::string_view prefix) {
    for (const auto& m : msgs) if (m.starts_with(prefix)) return true;
    return false;
  };
  EXPECT_TRUE(has("parley listening on")) << stdout_reader.text();
  EXPECT_TRUE(has("parley ready http="));
  EXPECT_TRUE(has("signal 15 received: draining"));
  EXPECT_TRUE(has("stopped:"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace parley::testing
