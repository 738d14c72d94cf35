// The persister's HTTP endpoint: GET /metrics (Prometheus text) and GET
// /healthz (200 {"status":"ok"}, or 503 with the reason while PostgreSQL or
// Valkey fails). Nothing else; any other request gets 404.
//
// Thread: its own thread runs an io_context; connections are served one at a
// time, each bounded by a 2 s socket timeout (scrapes are rare and small).
// start()/stop() from the controlling thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "common/status.h"

namespace parley::persist {

struct StatusPage {
  int status = 200;
  std::string content_type;
  std::string body;
};

class StatusHttp {
 public:
  using Handler = std::function<StatusPage(const std::string& target)>;
  StatusHttp();
  ~StatusHttp();
  // Binds `listen` (host:port; port 0 picks one) and serves until stop().
  Status start(const std::string& listen, Handler handler);
  void stop();
  uint16_t port() const { return port_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  uint16_t port_ = 0;
  std::thread thread_;
};

}  // namespace parley::persist
