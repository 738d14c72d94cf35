// Everything a run is parameterised by, the presets, and the command line.
#pragma once

#include <string>
#include <vector>

namespace bench {

struct Options {
  // What to run.
  std::string scenario = "chat";  // chat | broadcast | world | soak | ramp | churn
  std::string preset;             // the preset it came from, for reports
  // Where.
  std::string host = "127.0.0.1";
  int port = 7700;
  std::string transport = "ws";   // ws | tcp
  // PROTOCOL.md "Binary encoding: MessagePack": json | msgpack (WebSocket: the
  // parley.v1.msgpack subprotocol; TCP: hello "enc":"msgpack").
  std::string encoding = "json";
  bool deltas = false;            // hello caps ["state_delta"] (PROTOCOL.md "State deltas")
  bool batched_deltas = false;    // and "state_delta_batch" ("Batched state deltas"); sets deltas
  bool ideal = false;             // count each state's ideal bytes (delta_audit.h; world-big)
  std::string ws_path = "/v1/ws";
  std::string target_name = "parley";  // label in reports (parley, node-ws, bun)
  std::string tenant = "demo";
  std::string secret = "demo-secret-change-me-0123456789";
  int src_addrs = 8;              // spread over 127.0.1.1.. when the target is loopback
  // Shape.
  int conns = 200;
  int channel_size = 20;
  std::string ns = "chat";        // namespace part of channel names
  double rate = 200;              // total pub msgs/s
  int body_bytes = 64;            // padding in each pub body
  double state_hz = 0;            // per connection (world)
  double up_hz = 0;               // `up` ops per connection per second (world; the
                                  // namespace needs an upstream that forwards up)
  // --load-x: the offered load as a multiple of the preset's (rate and state_hz are
  // multiplied once all flags are read; connections, channels and churn stay).
  double load_x = 1;
  // Interest areas (PROTOCOL.md): > 0 sends states with "pos", each avatar on a
  // grid of cells this wide, laid out so that a 3x3 neighbourhood holds about
  // aoi_neighbours avatars of its channel; the namespace needs the same aoi_cell.
  double aoi_cell = 0;
  int aoi_neighbours = 50;
  double churn_per_s = 0;         // leave+rejoin per second, total (world)
  double ping_s = 0;              // app-level ping per connection (soak, tcp)
  bool reconnect = true;          // reconnect + join with since after a drop
  // Churn scenario (churn.h): channels joined once, published to, left.
  int churn_channels = 0;         // total fresh channels; > 0 selects the scenario
  int churn_msgs = 3;             // pubs per channel
  int churn_depth = 8;            // channels in flight per connection
  double churn_idle_s = 0;        // keep sampling the server this long afterwards
  std::string churn_body = "x";
  // Events scenario (events.h): producers (--conns) over the Unix socket or TCP.
  std::string unix_path;          // --unix: connect here instead of --target
  std::string api_key = "demo-api-key-change-me";
  std::string topic = "hunt";
  int keys = 1000;                // distinct event keys (players)
  int groups = 1;                 // consumer groups
  int members = 1;                // members per group
  int events_batch = 50;          // events per emit
  std::string board;              // leaderboard to audit (sum of body.points per body.player, per round)
  double round_s = 120;           // the body's round changes this often
  int partitions = 16;            // the topic's (the Redis Streams run uses as many streams)
  bool event_ids = true;          // --no-ids: events without "id" (no dedupe window held)
  std::string redis_bin;          // --redis PATH: also run the Redis Streams pipeline
  // Time.
  double duration_s = 10;
  double ramp_s = 2;              // connections are opened evenly over this
  double drain_s = 5;             // max wait for acks and deliveries at the end
  double connect_timeout_s = 10;
  // Ramp scenario: steps of the pub rate (ramp_of = "rate") or of the state rate per
  // connection (ramp_of = "state", the world ramp).
  std::string ramp_of = "rate";
  double step_s = 5;
  double step_factor = 1.5;
  int max_steps = 8;
  double max_p99_ms = 100;        // delivery p99 bound per step
  int ramp_repeats = -1;          // a broken step runs again at its rate this many times
                                  // before it ends the ramp; -1: 0, and 1 in compare --ramp
  // The target's tick (tick_ms of the namespace): tick intervals are measured
  // against it (Latencies::tick_dev). compare's Parley config uses 20.
  double tick_ms = 20;
  double min_accepted_pct = 99.9;
  // Engine.
  int threads = 1;
  int procs = 1;
  int proc_index = 0;             // set in forked children
  int max_inflight = 256;         // unacked pubs per connection (power of two)
  int retry_max = 20;
  // Audit.
  bool history_check = true;
  int history_len = 1000;         // namespace history length of the target
  // Output.
  std::string json_out;
  std::string html_out;
  int server_pid = 0;
  bool progress = true;
  std::string run_id;             // channel names carry it so runs never mix
  std::string server_cmd;         // compare: how the target was started (report)
  std::string command_line;       // as typed, for reports
  // compare: what to start.
  std::string parley_bin;         // default: next to this build's parley-bench
  std::string peers_dir;          // default: the source tree's bench/
  std::string targets = "parley,node-ws,bun";
  // compare's parley-hook target: Parley with hook_pub = hook_url on the namespace
  // the scenario publishes to (--ns); app_pid: the app server behind it, whose CPU
  // (/proc) is read over each target's run (hook_figures.h).
  std::string hook_url;
  int app_pid = 0;
  // compare: CPUs for every target and for this generator (cpu_affinity.h), e.g.
  // "0" and "1" on two cores; empty = shared (not pinned).
  std::string server_cpus;
  std::string bench_cpus;
  // compare --ramp: each target's offered rate raised to its cliff (compare_ramp.h).
  bool ramp_compare = false;
};

// Parses argv (after the subcommand). Throws std::runtime_error naming the flag
// on a bad one (main() prints it with the usage and exits 2).
// Presets (chat-6k, ccu-soak, world-6k, broadcast, soak, world, ramp, chat) are
// applied first, so later flags override them.
Options parse_options(const std::vector<std::string>& args);
std::string usage();
// Applies a named preset; false if unknown.
bool apply_preset(const std::string& name, Options& o);

}  // namespace bench
