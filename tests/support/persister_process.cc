#include "persister_process.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "support/server_process.h"

namespace parley::testing {

PersisterProcess::PersisterProcess(PersisterSpec spec) : spec_(std::move(spec)) {
  char tmpl[] = "/tmp/parley-persist-XXXXXX";
  dir_ = mkdtemp(tmpl) ? tmpl : "/tmp";
  std::ofstream cfg(dir_ + "/parley.toml");
  cfg << "[server]\nstore = \"valkey\"\nlog_level = \"info\"\n\n" << spec_.tenants_toml << "\n"
      << spec_.valkey_toml << "\n";
  if (!spec_.postgres_url.empty()) cfg << "[postgres]\nurl = \"" << spec_.postgres_url << "\"\n";
  cfg << spec_.sections_toml << "\n"
      << "[persist]\nlisten = \"127.0.0.1:0\"\n" << spec_.persist_extra << "\n";
}

PersisterProcess::~PersisterProcess() {
  if (child_.running()) kill9();
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

void PersisterProcess::start() {
  const bool ready = child_.launch(
      {ParleyChild::binary(PARLEY_BIN), "persist", "--config", dir_ + "/parley.toml"},
      dir_ + "/persist.log", [this](const std::string& line) {
        unsigned h = 0;
        const char* at = strstr(line.c_str(), "parley persist ready http=");
        if (!at || sscanf(at, "parley persist ready http=%u", &h) != 1) return false;
        http_port_ = static_cast<uint16_t>(h);
        return true;
      });
  ASSERT_TRUE(ready) << "persister did not start:\n" << log();
}

void PersisterProcess::kill9() { child_.kill9(); }

void PersisterProcess::terminate() { child_.signal(SIGTERM); }

int PersisterProcess::wait_exit(std::chrono::milliseconds timeout) {
  return child_.wait_exit(timeout);
}

std::string PersisterProcess::log() const { return read_file(dir_ + "/persist.log"); }

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
