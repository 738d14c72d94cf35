#include "cluster/valkey_subscriber.h"

#include <hiredis/hiredis.h>

#include <spdlog/spdlog.h>

#include "store/valkey/cluster_map.h"
#include "store/valkey/partition_map.h"
#include "store/valkey/resp_connection.h"

namespace parley::cluster {

namespace asio = boost::asio;
using store::valkey::format_command;
using store::valkey::key_slot;
using store::valkey::parse_redirect;
using store::valkey::Reply;
using store::valkey::RespSocket;

namespace {
std::string str_of(const redisReply* r) {
  if (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS || r->type == REDIS_REPLY_ERROR) {
    return std::string(r->str, r->len);
  }
  return {};
}
}  // namespace

Subscriber::Subscriber(asio::io_context& loop, HostPort addr, Handlers handlers)
    : handlers_(std::move(handlers)), sock_(loop, std::move(addr), *this) {}

Subscriber::~Subscriber() = default;

void Subscriber::subscribe(const std::string& channel) {
  if (sock_.state() == RespSocket::State::kClosed || !wanted_.insert(channel).second) return;
  if (sock_.state() == RespSocket::State::kReady) return sock_.send(format_command({"SSUBSCRIBE", channel}));
  // Sends every wanted channel once connected (a backoff reconnects by itself).
  if (sock_.state() == RespSocket::State::kIdle) sock_.connect();
}

void Subscriber::unsubscribe(const std::string& channel) {
  if (wanted_.erase(channel) == 0) return;
  if (sock_.state() == RespSocket::State::kReady) sock_.send(format_command({"SUNSUBSCRIBE", channel}));
}

void Subscriber::on_socket_ready() {
  // One command per channel: in a cluster a multi-channel SSUBSCRIBE must stay
  // within one slot.
  std::string out;
  for (const auto& ch : wanted_) out += format_command({"SSUBSCRIBE", ch});
  sock_.send(out);
}

void Subscriber::on_socket_reply(Reply r) {
  if (r->type == REDIS_REPLY_ERROR) {
    // A MOVED answer to an SSUBSCRIBE: every wanted channel of that slot
    // belongs elsewhere now.
    const std::string err = str_of(r.get());
    auto redirect = parse_redirect(err);
    if (!redirect) {
      spdlog::warn("valkey {}:{} (subscriber): {}", address().ip, address().port, err);
      return;
    }
    std::vector<std::string> moved;
    for (const auto& ch : wanted_) {
      if (key_slot(ch) == redirect->slot) moved.push_back(ch);
    }
    for (const auto& ch : moved) {
      wanted_.erase(ch);
      if (handlers_.lost) handlers_.lost(ch);
    }
  } else if (r->type == REDIS_REPLY_ARRAY && r->elements == 3 && r->element[0]->type == REDIS_REPLY_STRING &&
             r->element[1]->type == REDIS_REPLY_STRING) {
    const std::string kind = str_of(r->element[0]);
    std::string ch = str_of(r->element[1]);
    if (kind == "smessage" && r->element[2]->type == REDIS_REPLY_STRING) {
      if (r->element[2]->len > kMaxPush) return sock_.fail("push too large");
      if (wanted_.contains(ch) && handlers_.message) handlers_.message(ch, str_of(r->element[2]));
    } else if (kind == "ssubscribe") {
      if (wanted_.contains(ch) && handlers_.subscribed) handlers_.subscribed(ch);
    } else if (kind == "sunsubscribe" && wanted_.contains(ch)) {
      // Not asked for: the node gave the slot away (Cluster resharding).
      wanted_.erase(ch);
      if (handlers_.lost) handlers_.lost(ch);
    }
  }
}

void Subscriber::on_socket_failed(const std::string& why, Was was) {
  if (was == Was::kReady) spdlog::warn("valkey {}:{} (subscriber): {}", address().ip, address().port, why);
  if (was != Was::kClosed && was != Was::kBackoff && handlers_.failed) handlers_.failed();
}

void Subscriber::close() { sock_.close(); }

}  // namespace parley::cluster
