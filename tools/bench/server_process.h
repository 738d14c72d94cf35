// Starting and stopping a server under test (compare): fork/exec with its output
// in a log file, wait until its port accepts, stop with SIGTERM then SIGKILL.
#pragma once

#include <string>
#include <vector>

#include "cpu_affinity.h"

namespace bench {

class ServerProcess {
 public:
  ServerProcess() = default;
  ~ServerProcess() { stop(); }
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  // Starts argv[0] with argv; false when exec fails or the port does not accept
  // within timeout_s. With cpus, the child is pinned to them before exec.
  bool start(const std::vector<std::string>& argv, const std::string& log_path, int port,
             double timeout_s, const CpuList* cpus = nullptr);
  void stop();
  int pid() const { return pid_; }

 private:
  int pid_ = 0;
};

// A loopback TCP port that was free a moment ago.
int free_port();
std::string shell_join(const std::vector<std::string>& argv);

}  // namespace bench
