#include "hook_figures.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <charconv>
#include <map>

#include <fmt/format.h>

namespace bench {

HookFigures parse_hook_metrics(std::string_view metrics, const std::string& label) {
  HookFigures h;
  h.label = label;
  const std::map<std::string_view, double HookFigures::*> fields = {
      {"parley_hook_requests_total", &HookFigures::requests},
      {"parley_hook_allowed_total", &HookFigures::allowed},
      {"parley_hook_modified_total", &HookFigures::modified},
      {"parley_hook_denied_total", &HookFigures::denied},
      {"parley_hook_timeouts_total", &HookFigures::timeouts},
      {"parley_hook_failures_total", &HookFigures::failures},
      {"parley_hook_failed_open_total", &HookFigures::failed_open},
      {"parley_hook_backpressure_total", &HookFigures::backpressure},
      {"parley_hook_answered_total", &HookFigures::answered},
      {"parley_hook_latency_microseconds_total", &HookFigures::latency_us_total},
  };
  const std::string want = "{hook=\"" + label + "\"} ";
  size_t pos = 0;
  while (pos < metrics.size()) {
    size_t end = metrics.find('\n', pos);
    if (end == std::string_view::npos) end = metrics.size();
    const std::string_view line = metrics.substr(pos, end - pos);
    pos = end + 1;
    const size_t brace = line.find('{');
    if (brace == std::string_view::npos || line.substr(brace, want.size()) != want) continue;
    auto it = fields.find(line.substr(0, brace));
    if (it == fields.end()) continue;
    const std::string_view v = line.substr(brace + want.size());
    double x = 0;
    auto r = std::from_chars(v.data(), v.data() + v.size(), x);
    if (r.ec != std::errc()) continue;
    h.*(it->second) = x;
    h.present = true;
  }
  return h;
}

std::string hook_problem(const HookFigures& h, uint64_t acked) {
  if (!h.present) return fmt::format("no parley_hook_* samples for hook=\"{}\" in /metrics", h.label);
  std::string why;
  auto add = [&why](std::string s) { why += (why.empty() ? "" : "; ") + s; };
  if (h.requests != double(acked) || h.allowed != double(acked))
    add(fmt::format("{} requests, {} allowed for {} acked pubs", h.requests, h.allowed, acked));
  if (h.modified || h.denied)
    add(fmt::format("{} modified, {} denied", h.modified, h.denied));
  if (h.timeouts || h.failures || h.failed_open || h.backpressure)
    add(fmt::format("{} timeouts, {} failures ({} failed open), {} backpressure", h.timeouts,
                    h.failures, h.failed_open, h.backpressure));
  return why;
}

std::optional<std::string> http_get_loopback(int port, const std::string& path) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return std::nullopt;
  timeval tv{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(uint16_t(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string reply;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) {
    const std::string req =
        fmt::format("GET {} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n", path);
    if (::send(fd, req.data(), req.size(), MSG_NOSIGNAL) == ssize_t(req.size())) {
      char buf[65536];
      ssize_t n;
      while ((n = ::recv(fd, buf, sizeof buf, 0)) > 0) reply.append(buf, size_t(n));
    }
  }
  ::close(fd);
  const size_t body = reply.find("\r\n\r\n");
  if (reply.rfind("HTTP/1.1 200", 0) != 0 || body == std::string::npos) return std::nullopt;
  // /metrics is answered with a Content-Length; a chunked reply is not expected here.
  return reply.substr(body + 4);
}

}  // namespace bench
