// A game's app server for upstream forwarding tests: an HTTP/1.1 server
// (Boost.Beast, blocking, one thread per connection, keep-alive) on 127.0.0.1
// that records every request and answers as the test's policy says: a status,
// a delay, or hanging up without an answer.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace parley::testing {

struct AppRequest {
  std::string method;
  std::string target;
  std::map<std::string, std::string> headers;  // names in lower case
  std::string body;
  int status = 0;          // what it was answered; 0: hung up
  int64_t received_ms = 0; // steady clock
  size_t connection = 0;   // which accepted connection carried it
};

struct AppAnswer {
  int status = 200;
  int delay_ms = 0;
  bool hang_up = false;  // close the connection without answering
  std::string body = "{}";  // the answer's body (a hook's verdict)
};

// One upstream event as the app server saw it.
struct AppEvent {
  std::string type, tenant, ch, user, conn, id, key, body;  // body: minified JSON
  int64_t ts = 0;
  int64_t seq = 0;
  int64_t target = 0;  // edit, delete
  size_t request = 0;  // index of the request that carried it
};

class AppServer {
 public:
  using Policy = std::function<AppAnswer(size_t index, const AppRequest&)>;
  // Listens at once (port 0: any free port).
  explicit AppServer(Policy policy = {}, uint16_t port = 0);
  // The same on a Unix socket at `unix_path` (made by the server, removed by stop()).
  AppServer(Policy policy, const std::string& unix_path);
  ~AppServer();

  uint16_t port() const { return port_; }
  std::string url(const std::string& path = "/events") const;
  std::vector<AppRequest> requests() const;
  // The events of the requests answered 2xx, in arrival order.
  std::vector<AppEvent> accepted_events() const;
  // Waits until `pred(accepted_events())` holds; false on timeout.
  bool wait_for(const std::function<bool(const std::vector<AppEvent>&)>& pred,
                std::chrono::milliseconds timeout = std::chrono::seconds(10)) const;
  size_t connections() const { return connections_.load(); }
  void stop();

 private:
  void accept_loop();
  void serve(int fd, size_t conn);

  Policy policy_;
  int listen_fd_ = -1;
  int family_ = 0;          // AF_INET or AF_UNIX
  std::string unix_path_;
  uint16_t port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<size_t> connections_{0};
  mutable std::mutex mu_;
  std::vector<AppRequest> requests_;
  std::vector<int> fds_;
  std::vector<std::thread> threads_;
  std::thread acceptor_;
};

// A port on 127.0.0.1 where nothing listens (an app server that is down).
uint16_t dead_port();

// The events of one JSON array body (as forwarded upstream).
std::vector<AppEvent> parse_events(const std::string& body, size_t request = 0);

}  // namespace parley::testing
