// A blocking HTTP/1.1 client for one endpoint, over TCP or TLS (Boost.Beast):
// what the DynamoDB client sends its signed POSTs through. One kept-alive
// connection, opened again after any failure; every step (resolve, connect,
// handshake, write, read) bounded by timeout_ms. TLS verifies the server's
// chain against the system's trust store (or ca_file) and its name against the
// endpoint's host: there is no switch to turn that off; tests use plain http://
// on 127.0.0.1.
//
// Thread: one owner at a time (a persister worker, a history reader). Blocking:
// never on an event loop.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"

namespace parley::store::dynamodb {

struct Endpoint {
  bool tls = true;
  std::string host;
  uint16_t port = 443;
  std::string host_header;  // "host" or "host:port" when the port is not the scheme's
};
// "https://dynamodb.eu-west-1.amazonaws.com", "http://127.0.0.1:8000" (no path).
Result<Endpoint> parse_endpoint(std::string_view url);

struct HttpReply {
  unsigned status = 0;
  std::string body;
};

class HttpClient {
 public:
  HttpClient(Endpoint ep, uint32_t timeout_ms, std::string ca_file = {});
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // POST / with these headers (Host and Content-Length are added); any status
  // is a reply, an error only when no complete reply came.
  Result<HttpReply> post(const std::vector<std::pair<std::string, std::string>>& headers, std::string body) {
    return send("POST", "/", headers, std::move(body));
  }
  // The same for any method ("GET") and target (an encoded path and query).
  Result<HttpReply> send(std::string_view method, std::string_view target,
                         const std::vector<std::pair<std::string, std::string>>& headers, std::string body);

  const Endpoint& endpoint() const { return ep_; }

 private:
  struct Impl;
  Endpoint ep_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace parley::store::dynamodb
