// A headless bot: connects (WebSocket or raw TCP), joins a channel from its
// first message (`since` 0), publishes --count messages, and runs until it
// has every publish acknowledged and has received --expect messages of the
// channel, gap-free and in order. The shape of a load bot or a soak test;
// the suite runs two of them at once, one per transport (tests/bot_test.sh).
//
//   parley-cpp-bot --url ws://127.0.0.1:7700/v1/ws --token JWT --channel chat:bots
//                  --count 100 --expect 200 [--timeout-ms 30000]   (one command line)
//   wss://…: --ca-file PEM trusts that CA instead of the system's (a self-signed server).
//
// Exit status 0 when all of it happened before the timeout, 1 otherwise.
#include <parley/client.h>
#include <parley/default_transport.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>

int main(int argc, char** argv) {
  std::string url, token, channel = "chat:bots", ca_file;
  int64_t count = 10, expect = -1, timeout_ms = 30000;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--url") url = v;
    else if (k == "--token") token = v;
    else if (k == "--channel") channel = v;
    else if (k == "--count") count = std::atoll(v.c_str());
    else if (k == "--expect") expect = std::atoll(v.c_str());
    else if (k == "--timeout-ms") timeout_ms = std::atoll(v.c_str());
    else if (k == "--ca-file") ca_file = v;
    else {
      std::cerr << "bot: unknown option " << k << '\n';
      return 2;
    }
  }
  if (url.empty() || token.empty()) {
    std::cerr << "usage: parley-cpp-bot --url URL --token JWT [--channel CH] [--count N] [--expect M] [--ca-file PEM]\n";
    return 2;
  }
  if (expect < 0) expect = count;

  parley::ClientOptions options;
  options.url = url;
  options.token = token;
  parley::DefaultTransportOptions tls;
  tls.tls_ca_file = ca_file;
  options.transport = parley::make_default_transport(tls);
  parley::Client client(std::move(options));

  int64_t acked = 0, received = 0, last_seq = 0, own = 0;
  bool failed = false;
  std::string user;
  client.on_open([&](const parley::Welcome& w) {
    user = w.user;
    std::cerr << "bot: connected to " << url << " as " << w.user << " (" << w.conn << ")\n";
  });
  client.on_error([&](const parley::Error& e) { std::cerr << "bot: error " << e.code << ": " << e.message << '\n'; });
  client.on_closed([&] { failed = true; });

  parley::Channel ch = client.channel(channel);
  ch.on_msg([&](const parley::Message& m) {
    if (m.seq != last_seq + 1) {
      std::cerr << "bot: seq " << m.seq << " after " << last_seq << '\n';
      failed = true;
    }
    last_seq = m.seq;
    received++;
    if (m.from == user) own++;
  });
  ch.on_gap([&](const parley::Gap& g) {
    std::cerr << "bot: gap " << g.from << ".." << g.to << '\n';
    failed = true;
  });
  ch.join(
      [&](const parley::Result<parley::Joined>& r) {
        if (!r.ok()) {
          std::cerr << "bot: join failed: " << r.error().code << '\n';
          failed = true;
          return;
        }
        for (int64_t k = 0; k < count; k++) {
          ch.publish({{"bot", user}, {"n", k}}, [&](const parley::Result<parley::Ack>& a) {
            if (a.ok()) acked++;
            else {
              std::cerr << "bot: publish failed: " << a.error().code << '\n';
              failed = true;
            }
          });
        }
      },
      0);

  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (!failed && !(acked == count && received >= expect) && std::chrono::steady_clock::now() < deadline) {
    client.poll(std::chrono::milliseconds(50));
  }
  std::cout << "{\"url\":\"" << url << "\",\"published\":" << acked << ",\"received\":" << received
            << ",\"own\":" << own << ",\"last_seq\":" << last_seq << "}\n";
  const bool ok = !failed && acked == count && received >= expect && own == count;
  client.close();
  client.poll();
  return ok ? 0 : 1;
}
