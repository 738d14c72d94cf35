#include "support/app_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <simdjson.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/generic/stream_protocol.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <cctype>
#include <cstring>

namespace parley::testing {

namespace beast = boost::beast;
namespace http = beast::http;
namespace asio = boost::asio;

namespace {
int64_t steady_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace

AppServer::AppServer(Policy policy, const std::string& unix_path)
    : policy_(std::move(policy)), family_(AF_UNIX), unix_path_(unix_path) {
  listen_fd_ = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  if (unix_path.size() >= sizeof a.sun_path) throw std::runtime_error("app server: socket path too long");
  std::memcpy(a.sun_path, unix_path.c_str(), unix_path.size() + 1);
  ::unlink(unix_path.c_str());
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(listen_fd_, 64) != 0) {
    throw std::runtime_error("app server: cannot listen on " + unix_path);
  }
  acceptor_ = std::thread([this] { accept_loop(); });
}

AppServer::AppServer(Policy policy, uint16_t port) : policy_(std::move(policy)), family_(AF_INET) {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::listen(listen_fd_, 64) != 0) {
    throw std::runtime_error("app server: cannot listen");
  }
  socklen_t len = sizeof a;
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len);
  port_ = ntohs(a.sin_port);
  acceptor_ = std::thread([this] { accept_loop(); });
}

AppServer::~AppServer() { stop(); }

std::string AppServer::url(const std::string& path) const {
  return "http://127.0.0.1:" + std::to_string(port_) + path;
}

void AppServer::stop() {
  if (stopping_.exchange(true)) return;
  ::shutdown(listen_fd_, SHUT_RDWR);
  if (acceptor_.joinable()) acceptor_.join();
  ::close(listen_fd_);
  if (!unix_path_.empty()) ::unlink(unix_path_.c_str());
  std::vector<std::thread> threads;
  {
    std::lock_guard lock(mu_);
    for (int fd : fds_) ::shutdown(fd, SHUT_RDWR);
    threads.swap(threads_);
  }
  for (auto& t : threads) t.join();
}

void AppServer::accept_loop() {
  while (!stopping_) {
    const int fd = ::accept(listen_fd_, nullptr, nullptr);
    if (fd < 0) {
      if (stopping_) return;
      continue;
    }
    std::lock_guard lock(mu_);
    if (stopping_) {
      ::close(fd);
      return;
    }
    fds_.push_back(fd);
    const size_t conn = connections_++;
    threads_.emplace_back([this, fd, conn] { serve(fd, conn); });
  }
}

void AppServer::serve(int fd, size_t conn) {
  asio::io_context ctx;
  asio::generic::stream_protocol::socket sock(ctx);
  boost::system::error_code ec;
  sock.assign(asio::generic::stream_protocol(family_, 0), fd, ec);
  beast::flat_buffer buf;
  for (;;) {
    http::request<http::string_body> req;
    http::read(sock, buf, req, ec);
    if (ec) break;
    AppRequest r;
    r.method = std::string(req.method_string());
    r.target = std::string(req.target());
    for (const auto& f : req) {
      std::string name(f.name_string());
      for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      r.headers[name] = std::string(f.value());
    }
    r.body = req.body();
    r.received_ms = steady_ms();
    r.connection = conn;
    size_t index;
    {
      std::lock_guard lock(mu_);
      index = requests_.size();
      requests_.push_back(r);
    }
    const AppAnswer a = policy_ ? policy_(index, r) : AppAnswer{};
    if (a.delay_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(a.delay_ms));
    if (a.hang_up || stopping_) break;
    {
      std::lock_guard lock(mu_);
      requests_[index].status = a.status;
    }
    http::response<http::string_body> res{static_cast<http::status>(a.status), 11};
    res.set(http::field::content_type, "application/json");
    res.body() = a.body;
    res.keep_alive(req.keep_alive());
    res.prepare_payload();
    http::write(sock, res, ec);
    if (ec || !req.keep_alive()) break;
  }
  sock.shutdown(asio::generic::stream_protocol::socket::shutdown_both, ec);
  sock.close(ec);  // closes fd
  std::lock_guard lock(mu_);
  std::erase(fds_, fd);
}

std::vector<AppRequest> AppServer::requests() const {
  std::lock_guard lock(mu_);
  return requests_;
}

std::vector<AppEvent> AppServer::accepted_events() const {
  std::vector<AppEvent> out;
  const auto reqs = requests();
  for (size_t i = 0; i < reqs.size(); ++i) {
    if (reqs[i].status < 200 || reqs[i].status > 299) continue;
    auto evs = parse_events(reqs[i].body, i);
    out.insert(out.end(), evs.begin(), evs.end());
  }
  return out;
}

bool AppServer::wait_for(const std::function<bool(const std::vector<AppEvent>&)>& pred,
                         std::chrono::milliseconds timeout) const {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (pred(accepted_events())) return true;
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

uint16_t dead_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

std::vector<AppEvent> parse_events(const std::string& body, size_t request) {
  std::vector<AppEvent> out;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (parser.parse(body).get(doc) || !doc.is_array()) {
    AppEvent bad;
    bad.type = "!not-a-json-array";
    bad.body = body;
    out.push_back(bad);
    return out;
  }
  for (auto item : doc.get_array()) {
    AppEvent e;
    e.request = request;
    auto str = [&item](const char* k) {
      std::string_view v;
      return item[k].get_string().get(v) ? std::string() : std::string(v);
    };
    e.type = str("type");
    e.tenant = str("tenant");
    e.ch = str("ch");
    e.user = str("user");
    e.conn = str("conn");
    e.id = str("id");
    e.key = str("key");
    int64_t n;
    if (!item["ts"].get_int64().get(n)) e.ts = n;
    if (!item["seq"].get_int64().get(n)) e.seq = n;
    if (!item["target"].get_int64().get(n)) e.target = n;
    simdjson::dom::element b;
    if (!item["body"].get(b)) e.body = simdjson::minify(b);
    out.push_back(e);
  }
  return out;
}

}  // namespace parley::testing
