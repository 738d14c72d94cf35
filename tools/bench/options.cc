#include "options.h"

#include <charconv>
#include <chrono>
#include <functional>
#include <map>
#include <stdexcept>

#include <fmt/format.h>

namespace bench {

bool apply_preset(const std::string& name, Options& o) {
  o.preset = name;
  if (name == "chat") {
    o.scenario = "chat";
  } else if (name == "chat-6k") {
    // DESIGN.md reference: 6,000 durable msg/s, 10,000 connections, channels of 20.
    o.scenario = "chat";
    o.conns = 10000;
    o.channel_size = 20;
    o.rate = 6000;
    o.duration_s = 300;
    o.ramp_s = 30;
  } else if (name == "broadcast") {
    // The plain room broadcast the peers were first measured with (TESTING.md).
    o.scenario = "chat";
    o.ns = "room";
    o.conns = 1000;
    o.channel_size = 100;
    o.rate = 1000;
    o.duration_s = 15;
    o.ramp_s = 2;
  } else if (name == "soak") {
    o.scenario = "soak";
    o.conns = 1000;
    o.rate = 10;
    o.ping_s = 20;
    o.duration_s = 60;
    o.ramp_s = 5;
  } else if (name == "ccu-soak") {
    // As many connections as one process/node holds under the 20,000-file limit.
    o.scenario = "soak";
    o.conns = 19000;
    o.channel_size = 20;
    o.rate = 190;
    o.ping_s = 20;
    o.duration_s = 300;
    o.ramp_s = 60;
  } else if (name == "world") {
    o.scenario = "world";
    o.ns = "world";
    o.conns = 500;
    o.channel_size = 100;
    o.state_hz = 10;
    o.rate = 5;
    o.churn_per_s = 2;
    o.duration_s = 15;
    o.ramp_s = 3;
  } else if (name == "world-6k") {
    // DESIGN.md world proxy: 6,000 avatars in 60 worlds of 100, state at 10 Hz.
    o.scenario = "world";
    o.ns = "world";
    o.conns = 6000;
    o.channel_size = 100;
    o.state_hz = 10;
    o.rate = 60;
    o.churn_per_s = 10;
    o.duration_s = 60;
    o.ramp_s = 10;
  } else if (name == "world-big") {
    // Issue 13: one world of 6,000 avatars with interest areas, each seeing ~50
    // neighbours, state at 10 Hz. The target's namespace "big" needs aoi_cell = 50
    // (and tick_ms = 20, durable = false): see docs/benchmarks.md.
    o.scenario = "world";
    o.ns = "big";
    o.conns = 6000;
    o.channel_size = 6000;
    o.state_hz = 10;
    o.rate = 60;
    o.churn_per_s = 10;
    o.aoi_cell = 50;
    o.aoi_neighbours = 50;
    o.ideal = true;
    o.duration_s = 60;
    o.ramp_s = 20;
  } else if (name == "ramp") {
    o.scenario = "ramp";
    o.conns = 1000;
    o.channel_size = 20;
    o.rate = 500;
    o.step_s = 5;
    o.step_factor = 1.5;
    o.max_steps = 8;
    o.ramp_s = 3;
  } else if (name == "ramp-world") {
    // The world ramp: avatars in worlds of 100 raise their state rate in steps (chat
    // stays at a trickle) until the state delivery p99 bound breaks.
    o.scenario = "ramp";
    o.ramp_of = "state";
    o.ns = "world";
    o.conns = 1000;
    o.channel_size = 100;
    o.state_hz = 2;
    o.rate = 5;
    o.step_s = 5;
    o.step_factor = 1.5;
    o.max_steps = 10;
    o.ramp_s = 3;
  } else if (name == "events") {
    o.scenario = "events";
    o.transport = "tcp";
    o.conns = 2;
    o.rate = 10000;
  } else if (name == "hunt-20k") {
    // Issue 12: 20,000 players' events at 35,000 events/s (2.1 M a minute) over the
    // topic's 16 partitions, two consumer groups; rounds of 2 minutes in the bodies.
    o.scenario = "events";
    o.transport = "tcp";
    o.conns = 4;
    o.rate = 35000;
    o.keys = 20000;
    o.groups = 2;
    o.members = 2;
    o.events_batch = 50;
    o.board = "hunt";
    o.duration_s = 600;
    o.drain_s = 30;
  } else if (name == "churn") {
    // Issue 11's soak: a million channels used once and abandoned, bounded in time.
    o.scenario = "churn";
    o.ns = "chat";
    o.conns = 32;
    o.churn_channels = 1'000'000;
    o.churn_msgs = 3;
    o.churn_depth = 8;
    o.churn_idle_s = 150;
    o.duration_s = 300;
  } else {
    o.preset.clear();
    return false;
  }
  return true;
}

std::string usage() {
  return R"(usage: parley-bench SCENARIO|PRESET [flags]
       parley-bench compare SCENARIO|PRESET [flags]   (Parley and each peer, one by one)
presets: chat chat-6k broadcast world world-6k world-big soak ccu-soak ramp ramp-world churn
         events hunt-20k
flags (defaults from the preset):
  events/hunt-20k: --unix PATH | --target HOST:PORT (raw TCP), --api-key K, --topic T,
    --conns producers, --rate events/s, --batch events per emit, --keys N, --groups G,
    --members M (per group), --duration S, --drain S, --server-pid PID,
    --board B (audit leaderboard B: sum of body.points per body.player per round; hunt-20k: hunt),
    --round-s S (rounds in the bodies, 120), --partitions P (16), --no-ids (events without id),
    --redis PATH (then the same load through Redis Streams on a redis-server it starts)
  --target HOST:PORT   --transport ws|tcp   --path /v1/ws   --label NAME
  --encoding json|msgpack   (chat, broadcast, world, soak, ramp: every frame in that
                       encoding; the audit reads both)
  --deltas             (hello caps ["state_delta"]: in a namespace with state_delta the
                       audit applies the deltas and checks each rebuilt body)
  --batched-deltas     (--deltas, and caps "state_delta_batch": deltas as `sds` entries,
                       each applied and checked the same)
  --ideal | --no-ideal (world: count what changed for each viewer, the fields of each
                       stream it got that changed, and report bytes received / that;
                       on in world-big)
  --tenant T --secret S --src-addrs N
  --conns N --channel-size S --ns NAME --rate MSGS_PER_S --body-bytes B
  --state-hz H --churn PER_S --ping-s S --no-reconnect
  --up-hz H            (world: each avatar also sends `up` H times a second, the move
                       requests an app server behind upstream forwarding receives)
  --load-x F           (multiply --rate and --state-hz by F, e.g. compare at 5x the
                       preset's offered load; connections and churn unchanged)
  --aoi-cell W --aoi-neighbours N   (world: states carry pos on a grid of W-wide cells,
                       ~N avatars per 3x3 cells; the namespace needs aoi_cell = W)
  --duration S --ramp-up S --drain S
  --step-s S --step-factor F --max-steps N --max-p99-ms MS --min-accepted PCT
  --ramp-of rate|state   (ramp: step the pub rate, or the state Hz per connection)
  --threads N --procs N --max-inflight N --retry-max N
  --no-history --history-len N
  --churn-channels N --churn-msgs K --churn-depth D --churn-idle-s S   (churn: N fresh
                       channels, each joined, sent K pubs, left; D in flight per connection)
  --json FILE --html FILE --server-pid PID --no-progress --run-id ID
  compare only: --targets parley,node-ws,bun[,parley-msgpack,parley-hook,floor,floor-tick] --parley-bin PATH --peers-dir DIR
               --hook-url URL (parley-hook: Parley with hook_pub = URL on --ns, e.g.
               unix:/tmp/app.sock; the run fails unless the hook allowed every acked pub
               and nothing timed out or failed) --app-pid PID (the app server behind it:
               its CPU over each target's run, /proc/PID/stat)
               --server-cpus LIST --bench-cpus LIST (pin every target and the generator to
               separate CPUs, e.g. 0 and 1; Parley gets threads = its CPUs)
               --ramp (each target's rate raised x--step-factor every --step-s to its cliff:
               p99 <= --max-p99-ms, default 50 here, nothing lost, generator not behind;
               a broken step runs once more at its rate: --ramp-repeats, default 1 here)
  --tick-ms MS         the target's tick, for the tick-interval figures (20)
Exit status: 0 clean, 1 audit failure (loss, duplicate, reorder, mismatch), 2 usage
or setup error, 3 the run could not connect, 4 the --server-pid process exited during
the run.
)";
}

namespace {
// Strict numbers: all of `v` or an error naming the flag (std::stoi took "5x"
// as 5 and reported "abc" as just "stoi"). The bench links none of the
// server's libraries, so its usage errors are exceptions caught in main().
int int_of(const std::string& flag, const std::string& v) {
  int x = 0;
  auto r = std::from_chars(v.data(), v.data() + v.size(), x);
  if (v.empty() || r.ec != std::errc() || r.ptr != v.data() + v.size())
    throw std::runtime_error(flag + " must be a whole number, not \"" + v + "\"");
  return x;
}

double double_of(const std::string& flag, const std::string& v) {
  double x = 0;
  auto r = std::from_chars(v.data(), v.data() + v.size(), x);
  if (v.empty() || r.ec != std::errc() || r.ptr != v.data() + v.size())
    throw std::runtime_error(flag + " must be a number, not \"" + v + "\"");
  return x;
}

std::pair<std::string, int> split_host_port(const std::string& s) {
  auto colon = s.rfind(':');
  if (colon == std::string::npos || colon == 0) throw std::runtime_error("--target wants HOST:PORT");
  const int port = int_of("--target's port", s.substr(colon + 1));
  if (port < 1 || port > 65535) throw std::runtime_error("--target's port must be 1-65535");
  return {s.substr(0, colon), port};
}
}  // namespace

Options parse_options(const std::vector<std::string>& args) {
  Options o;
  size_t i = 0;
  if (i < args.size() && args[i].rfind("--", 0) != 0) {
    if (!apply_preset(args[i], o)) throw std::runtime_error("unknown scenario " + args[i]);
    ++i;
  }
  using Setter = std::function<void(const std::string& flag, const std::string& value)>;
  auto d = [](double& f) {
    return Setter([&f](const std::string& flag, const std::string& v) { f = double_of(flag, v); });
  };
  auto n = [](int& f) {
    return Setter([&f](const std::string& flag, const std::string& v) { f = int_of(flag, v); });
  };
  auto s = [](std::string& f) { return Setter([&f](const std::string&, const std::string& v) { f = v; }); };
  std::map<std::string, Setter> with_value = {
      {"--target", [&](const std::string&, const std::string& v) { std::tie(o.host, o.port) = split_host_port(v); }},
      {"--transport", s(o.transport)}, {"--encoding", s(o.encoding)}, {"--path", s(o.ws_path)}, {"--label", s(o.target_name)},
      {"--tenant", s(o.tenant)}, {"--secret", s(o.secret)}, {"--src-addrs", n(o.src_addrs)},
      {"--conns", n(o.conns)}, {"--channel-size", n(o.channel_size)}, {"--ns", s(o.ns)},
      {"--rate", d(o.rate)}, {"--body-bytes", n(o.body_bytes)}, {"--state-hz", d(o.state_hz)},
      {"--load-x", d(o.load_x)}, {"--up-hz", d(o.up_hz)},
      {"--aoi-cell", d(o.aoi_cell)}, {"--aoi-neighbours", n(o.aoi_neighbours)},
      {"--churn", d(o.churn_per_s)}, {"--ping-s", d(o.ping_s)},
      {"--duration", d(o.duration_s)}, {"--ramp-up", d(o.ramp_s)}, {"--drain", d(o.drain_s)},
      {"--step-s", d(o.step_s)}, {"--step-factor", d(o.step_factor)},
      {"--max-steps", n(o.max_steps)}, {"--max-p99-ms", d(o.max_p99_ms)},
      {"--min-accepted", d(o.min_accepted_pct)}, {"--threads", n(o.threads)},
      {"--procs", n(o.procs)}, {"--max-inflight", n(o.max_inflight)},
      {"--retry-max", n(o.retry_max)}, {"--churn-channels", n(o.churn_channels)},
      {"--churn-msgs", n(o.churn_msgs)}, {"--churn-depth", n(o.churn_depth)},
      {"--churn-idle-s", d(o.churn_idle_s)}, {"--history-len", n(o.history_len)},
      {"--json", s(o.json_out)}, {"--html", s(o.html_out)}, {"--server-pid", n(o.server_pid)},
      {"--run-id", s(o.run_id)}, {"--parley-bin", s(o.parley_bin)},
      {"--peers-dir", s(o.peers_dir)}, {"--unix", s(o.unix_path)}, {"--api-key", s(o.api_key)},
      {"--topic", s(o.topic)}, {"--keys", n(o.keys)}, {"--groups", n(o.groups)},
      {"--members", n(o.members)}, {"--batch", n(o.events_batch)},
      {"--board", s(o.board)}, {"--round-s", d(o.round_s)}, {"--partitions", n(o.partitions)},
      {"--redis", s(o.redis_bin)}, {"--targets", s(o.targets)}, {"--ramp-of", s(o.ramp_of)}, {"--proc-index", n(o.proc_index)},
      {"--tick-ms", d(o.tick_ms)}, {"--ramp-repeats", n(o.ramp_repeats)}, {"--server-cpus", s(o.server_cpus)}, {"--bench-cpus", s(o.bench_cpus)},
      {"--hook-url", s(o.hook_url)}, {"--app-pid", n(o.app_pid)},
  };
  for (; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--no-reconnect") { o.reconnect = false; continue; }
    if (a == "--no-history") { o.history_check = false; continue; }
    if (a == "--no-progress") { o.progress = false; continue; }
    if (a == "--no-ids") { o.event_ids = false; continue; }
    if (a == "--ramp") { o.ramp_compare = true; continue; }
    if (a == "--deltas") { o.deltas = true; continue; }
    if (a == "--batched-deltas") { o.deltas = o.batched_deltas = true; continue; }
    if (a == "--ideal") { o.ideal = true; continue; }
    if (a == "--no-ideal") { o.ideal = false; continue; }
    auto it = with_value.find(a);
    if (it == with_value.end()) throw std::runtime_error("unknown flag " + a);
    if (i + 1 >= args.size()) throw std::runtime_error(a + " wants a value");
    it->second(a, args[i + 1]);
    ++i;
  }
  if (o.conns < 1 || o.channel_size < 1 || o.threads < 1 || o.procs < 1)
    throw std::runtime_error("counts must be >= 1");
  if (o.duration_s <= 0 || o.duration_s > 24 * 3600)
    throw std::runtime_error("--duration must be in (0, 86400]");
  if (o.transport != "ws" && o.transport != "tcp")
    throw std::runtime_error("--transport is ws or tcp");
  if (o.encoding != "json" && o.encoding != "msgpack")
    throw std::runtime_error("--encoding is json or msgpack");
  if (!(o.load_x > 0 && o.load_x <= 1000)) throw std::runtime_error("--load-x must be in (0, 1000]");
  o.rate *= o.load_x;
  o.state_hz *= o.load_x;
  if (o.aoi_cell < 0 || o.aoi_neighbours < 1)
    throw std::runtime_error("--aoi-cell wants >= 0, --aoi-neighbours >= 1");
  if (o.ramp_of != "rate" && o.ramp_of != "state")
    throw std::runtime_error("--ramp-of is rate or state");
  if (o.ramp_of == "state" && o.state_hz <= 0)
    throw std::runtime_error("--ramp-of state wants --state-hz > 0");
  if (o.ramp_repeats < -1 || o.ramp_repeats > 10) throw std::runtime_error("--ramp-repeats must be 0-10");
  if (!(o.tick_ms >= 0 && o.tick_ms <= 10000)) throw std::runtime_error("--tick-ms must be in [0, 10000]");
  if (o.server_cpus.empty() != o.bench_cpus.empty())
    throw std::runtime_error("--server-cpus and --bench-cpus go together");
  if (o.round_s <= 0 || o.partitions < 1) throw std::runtime_error("--round-s and --partitions want > 0");
  if (o.churn_channels > 0) o.scenario = "churn";
  if (o.scenario == "churn" && (o.churn_msgs < 0 || o.churn_depth < 1 || o.transport != "ws"))
    throw std::runtime_error("churn wants --churn-msgs >= 0, --churn-depth >= 1, --transport ws");
  int p = 1;
  while (p < o.max_inflight) p <<= 1;
  o.max_inflight = p;
  if (o.run_id.empty()) {
    auto now = std::chrono::system_clock::now().time_since_epoch();
    o.run_id = fmt::format("b{}", std::chrono::duration_cast<std::chrono::seconds>(now).count());
  }
  return o;
}

}  // namespace bench
