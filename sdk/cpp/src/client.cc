// parley::Client and parley::Channel: thin handles over ClientCore / ChannelCore.
#include "parley/client.h"

#include "channel_core.h"
#include "client_core.h"

namespace parley {

Client::Client(ClientOptions options) : core_(std::make_unique<detail::ClientCore>(std::move(options))) {}
Client::~Client() = default;

void Client::poll(std::chrono::milliseconds wait) { core_->poll(wait); }
void Client::connect() { core_->connect(); }
void Client::close() { core_->close(); }
ClientState Client::state() const { return core_->state(); }
const Welcome& Client::welcome() const { return core_->welcome(); }
void Client::set_token(std::string token) { core_->set_token(std::move(token)); }
Channel Client::channel(const std::string& name) { return Channel(&core_->channel(name)); }

void Client::ping(std::function<void(const Result<int64_t>&)> done) {
  auto* core = core_.get();
  const int64_t t0 = core->now();
  const int64_t w0 = detail::ClientCore::wall_now();
  core->request({{"op", "ping"}}, false, [core, t0, w0, done = std::move(done)](Result<Json> r) {
    if (r.ok()) core->clock_sample(w0, detail::ClientCore::wall_now(), r.value());
    if (!done) return;
    if (r.ok()) done(core->now() - t0);
    else done(r.error());
  });
}

ClockEstimate Client::clock() const { return core_->clock(); }
int64_t Client::server_now() const {
  const ClockEstimate c = core_->clock();
  return c.valid ? detail::ClientCore::wall_now() + c.offset : -1;
}

void Client::request(Json frame, std::function<void(const Result<Json>&)> done) {
  core_->request(std::move(frame), true, [done = std::move(done)](Result<Json> r) {
    if (done) done(r);
  });
}

void Client::on_open(std::function<void(const Welcome&)> fn) { core_->on_open = std::move(fn); }
void Client::on_disconnect(std::function<void(const Disconnect&)> fn) { core_->on_disconnect = std::move(fn); }
void Client::on_bye(std::function<void(const Bye&)> fn) { core_->on_bye = std::move(fn); }
void Client::on_direct(std::function<void(const Direct&)> fn) { core_->on_direct = std::move(fn); }
void Client::on_retry(std::function<void(const Retry&)> fn) { core_->on_retry = std::move(fn); }
void Client::on_error(std::function<void(const Error&)> fn) { core_->on_error = std::move(fn); }
void Client::on_closed(std::function<void()> fn) { core_->on_closed = std::move(fn); }

const std::string& Channel::name() const { return core_->name(); }
bool Channel::joined() const { return core_->joined(); }
int64_t Channel::last_seq() const { return core_->last_seq(); }
std::vector<std::string> Channel::members() const { return core_->members(); }
void Channel::join(std::function<void(const Result<Joined>&)> done, std::optional<int64_t> since) {
  core_->join(std::move(done), since);
}
void Channel::leave() { core_->leave(); }
std::string Channel::publish(Json body, std::function<void(const Result<Ack>&)> done, std::string id) {
  return core_->publish(std::move(body), std::move(done), std::move(id));
}
void Channel::set_state(const std::string& key, Json body) { core_->set_state(key, std::move(body)); }
void Channel::clear_state(const std::string& key) { core_->clear_state(key); }
void Channel::up(Json body) { core_->up(std::move(body)); }
void Channel::history(const HistoryQuery& query,
                      std::function<void(const Result<std::vector<Message>>&)> done) {
  core_->history(query, [done = std::move(done)](Result<std::vector<Message>> r) {
    if (done) done(r);
  });
}
void Channel::edit(int64_t target, Json body, std::function<void(const Result<Moderated>&)> done) {
  core_->moderate("edit", target, std::move(body), std::move(done));
}
void Channel::delete_message(int64_t target, std::function<void(const Result<Moderated>&)> done) {
  core_->moderate("delete", target, nullptr, std::move(done));
}
void Channel::on_edit(std::function<void(const Message&)> fn) { core_->on_edit = std::move(fn); }
void Channel::on_delete(std::function<void(const Message&)> fn) { core_->on_delete = std::move(fn); }
void Channel::on_kicked(std::function<void(const Kicked&)> fn) { core_->on_kicked = std::move(fn); }
void Channel::on_msg(std::function<void(const Message&)> fn) { core_->on_msg = std::move(fn); }
void Channel::on_state(std::function<void(const State&)> fn) { core_->on_state = std::move(fn); }
void Channel::on_presence(std::function<void(const Presence&)> fn) { core_->on_presence = std::move(fn); }
void Channel::on_joined(std::function<void(const Joined&)> fn) { core_->on_joined = std::move(fn); }
void Channel::on_gap(std::function<void(const Gap&)> fn) { core_->on_gap = std::move(fn); }
void Channel::on_reset(std::function<void(const Reset&)> fn) { core_->on_reset = std::move(fn); }
void Channel::on_error(std::function<void(const Error&)> fn) { core_->on_error = std::move(fn); }

}  // namespace parley
