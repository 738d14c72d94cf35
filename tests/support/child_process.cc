#include "support/child_process.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

namespace parley::testing {
namespace {

bool port_free(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  ::close(fd);
  return ok;
}

std::vector<char*> argv_of(std::vector<std::string>& args) {
  std::vector<char*> v;
  for (auto& a : args) v.push_back(a.data());
  v.push_back(nullptr);
  return v;
}

}  // namespace

int pick_free_port(int lo, int hi, int also_free_at) {
  static std::mt19937 rng(static_cast<unsigned>(::getpid()) ^
                          static_cast<unsigned>(std::random_device{}()));
  std::uniform_int_distribution<int> dist(lo, hi - 1);
  for (int i = 0; i < 200; ++i) {
    const int p = dist(rng);
    if (port_free(p) && (also_free_at == 0 || port_free(p + also_free_at))) return p;
  }
  return 0;
}

pid_t spawn_child(std::vector<std::string> args, const SpawnOptions& opts) {
  auto argv = argv_of(args);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid != 0) return pid;
  if (opts.switch_user) {
    if (::setgid(opts.gid) != 0 || ::setuid(opts.uid) != 0) _exit(126);
  }
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) _exit(1);
  const int devnull = ::open("/dev/null", O_RDWR);
  const int out =
      opts.log.empty() ? devnull : ::open(opts.log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (devnull >= 0) ::dup2(devnull, 0);
  if (out >= 0) {
    ::dup2(out, 1);
    ::dup2(out, 2);
  }
  ::execvp(argv[0], argv.data());
  _exit(127);
}

bool wait_child_ready(pid_t pid, int timeout_ms, int poll_ms, const std::function<bool()>& up) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (std::chrono::steady_clock::now() < deadline) {
    if (pid <= 0 || ::waitpid(pid, nullptr, WNOHANG) == pid) return false;
    if (up()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(poll_ms));
  }
  return false;
}

int wait_child_exit(pid_t pid, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    int st;
    if (::waitpid(pid, &st, WNOHANG) == pid) return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return -1;
}

std::string make_temp_dir(const std::string& prefix) {
  const char* base = getenv("TMPDIR");
  std::string tmpl = std::string(base && *base ? base : "/tmp") + "/" + prefix + "XXXXXX";
  return mkdtemp(tmpl.data()) != nullptr ? tmpl : std::string();
}

std::string read_file(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::string ParleyChild::binary(const char* bin) {
  const char* env_bin = std::getenv("PARLEY_TEST_BIN");
  return env_bin && *env_bin ? env_bin : bin;
}

bool ParleyChild::launch(const std::vector<std::string>& args, const std::string& log_path,
                         const std::function<bool(const std::string& line)>& ready,
                         uint64_t fd_limit) {
  int out[2];
  if (pipe(out) != 0) return false;
  std::vector<std::string> argv_store = args;
  auto argv = argv_of(argv_store);
  pid_ = fork();
  if (pid_ < 0) return false;
  if (pid_ == 0) {
    int log = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    dup2(out[1], 1);
    dup2(log, 2);
    close(out[0]);
    if (fd_limit > 0) {
      struct rlimit rl {fd_limit, fd_limit};
      setrlimit(RLIMIT_NOFILE, &rl);
    }
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(out[1]);
  // Read stdout until the ready line (bounded), then keep draining it in the
  // background into the log so the child never blocks on a full pipe.
  std::string line;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  char c;
  bool is_ready = false;
  while (std::chrono::steady_clock::now() < deadline) {
    ssize_t n = read(out[0], &c, 1);
    if (n <= 0) break;
    if (c != '\n') {
      line += c;
      continue;
    }
    if (ready(line)) {
      is_ready = true;
      break;
    }
    // What the child logged before it was ready (or instead of being ready).
    std::ofstream(log_path, std::ios::app) << line << '\n';
    line.clear();
  }
  const int fd = out[0];
  std::thread([fd, log_path] {
    std::ofstream log(log_path, std::ios::app);
    char buf[4096];
    ssize_t n;
    // Flushed at once: a test reads the log while the child runs.
    while ((n = read(fd, buf, sizeof buf)) > 0) log.write(buf, n).flush();
    close(fd);
  }).detach();
  return is_ready;
}

void ParleyChild::kill9() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  waitpid(pid_, nullptr, 0);
  pid_ = -1;
}

void ParleyChild::signal(int sig) {
  if (pid_ > 0) ::kill(pid_, sig);
}

int ParleyChild::wait_exit(std::chrono::milliseconds timeout) {
  const int st = wait_child_exit(pid_, timeout);
  if (st >= 0) pid_ = -1;
  return st;
}

}  // namespace parley::testing
