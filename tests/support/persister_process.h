// Runs the real `parley persist` (the WAL persister) for integration tests:
// writes its config into a temporary folder, starts it, waits for its
// "parley persist ready http=" line and reads the /metrics port from it.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <string>

#include "support/child_process.h"

namespace parley::testing {

struct PersisterSpec {
  std::string tenants_toml;  // the same tenants as the servers (default_tenants_toml())
  std::string valkey_toml;   // the [valkey] section
  std::string postgres_url;  // empty: no [postgres] section
  std::string persist_extra; // more [persist] keys, one per line (consumer = "a", ...)
  std::string sections_toml; // more sections ([dynamodb] ...)
};

class PersisterProcess {
 public:
  explicit PersisterProcess(PersisterSpec spec);
  ~PersisterProcess();  // SIGKILLs a persister still running, removes the folder

  void start();  // asserts (gtest) on failure
  void kill9();
  void terminate();
  int wait_exit(std::chrono::milliseconds timeout);
  bool running() const { return child_.running(); }
  pid_t pid() const { return child_.pid(); }
  uint16_t http_port() const { return http_port_; }
  std::string log() const;

  // The value of an unlabelled sample in GET /metrics; -1 when absent.
  double metric(const std::string& name) const;

 private:
  PersisterSpec spec_;
  std::string dir_;
  ParleyChild child_;
  uint16_t http_port_ = 0;
};

}  // namespace parley::testing
