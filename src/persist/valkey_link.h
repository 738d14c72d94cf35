// A blocking connection to one Valkey/Redis node for the persister: pipelines of
// commands written at once, their replies read back in order (hiredis's
// synchronous API), every read and write bounded by a timeout.
//
// Any failure (connect, I/O, timeout, protocol) closes the connection and fails
// the whole pipeline with kUnavailable; the next call connects again. Error
// replies are replies, not failures: the caller reads their text (MOVED,
// NOGROUP, BUSYGROUP).
//
// Thread: blocking; one persister worker thread uses it, never an event loop.
#pragma once

#include <string>
#include <vector>

#include "common/host_port.h"
#include "common/status.h"
#include "store/valkey/resp_connection.h"

struct redisContext;

namespace parley::persist {

using store::valkey::Reply;
using Command = std::vector<std::string>;

class ValkeyLink {
 public:
  ValkeyLink(HostPort addr, int timeout_ms);
  ~ValkeyLink();
  ValkeyLink(const ValkeyLink&) = delete;
  ValkeyLink& operator=(const ValkeyLink&) = delete;

  // One reply per command, in order.
  Result<std::vector<Reply>> pipeline(const std::vector<Command>& cmds);
  const HostPort& address() const { return addr_; }
  std::string name() const { return addr_.ip + ":" + std::to_string(addr_.port); }

 private:
  Status ensure();
  void close();

  HostPort addr_;
  int timeout_ms_;
  redisContext* ctx_ = nullptr;
};

}  // namespace parley::persist
