#include "persist/valkey_link.h"

#include <hiredis/hiredis.h>

namespace parley::persist {

namespace {
Error unavailable(std::string msg) { return Error{ErrorCode::kUnavailable, std::move(msg), 1000}; }
timeval tv_of(int ms) { return timeval{ms / 1000, (ms % 1000) * 1000}; }
}  // namespace

ValkeyLink::ValkeyLink(HostPort addr, int timeout_ms) : addr_(std::move(addr)), timeout_ms_(timeout_ms) {}

ValkeyLink::~ValkeyLink() { close(); }

void ValkeyLink::close() {
  if (ctx_) redisFree(ctx_);
  ctx_ = nullptr;
}

Status ValkeyLink::ensure() {
  if (ctx_) return Status::ok();
  ctx_ = redisConnectWithTimeout(addr_.ip.c_str(), addr_.port, tv_of(timeout_ms_));
  if (ctx_ == nullptr || ctx_->err) {
    std::string why = ctx_ ? ctx_->errstr : "out of memory";
    close();
    return unavailable("valkey " + name() + ": " + why);
  }
  redisSetTimeout(ctx_, tv_of(timeout_ms_));
  return Status::ok();
}

Result<std::vector<Reply>> ValkeyLink::pipeline(const std::vector<Command>& cmds) {
  if (Status s = ensure(); !s) return s.error();
  for (const auto& cmd : cmds) {
    std::vector<const char*> argv;
    std::vector<size_t> lens;
    for (const auto& a : cmd) {
      argv.push_back(a.data());
      lens.push_back(a.size());
    }
    if (redisAppendCommandArgv(ctx_, static_cast<int>(argv.size()), argv.data(), lens.data()) != REDIS_OK) {
      std::string why = ctx_->errstr;
      close();
      return unavailable("valkey " + name() + ": " + why);
    }
  }
  std::vector<Reply> out;
  out.reserve(cmds.size());
  for (size_t i = 0; i < cmds.size(); ++i) {
    void* r = nullptr;
    if (redisGetReply(ctx_, &r) != REDIS_OK || r == nullptr) {
      std::string why = ctx_->errstr;
      close();
      return unavailable("valkey " + name() + ": " + why);
    }
    out.emplace_back(static_cast<redisReply*>(r));
  }
  return out;
}

}  // namespace parley::persist
