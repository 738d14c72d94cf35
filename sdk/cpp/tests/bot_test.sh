#!/usr/bin/env bash
# Two bots (examples/bot.cc) on one channel of the real server, one over
# WebSocket and one over raw TCP, at the same time: each publishes N and must
# receive all 2N messages, gap-free and in order, across the two transports.
#   bot_test.sh <parley server binary> <parley-cpp-bot>
set -euo pipefail
server="$1"
bot="$2"
if [[ ! -x "$server" ]]; then
  echo "sdk_cpp_bot: no server binary at $server (set PARLEY_SERVER_BIN): skipped"
  exit 77
fi
dir="$(mktemp -d)"
pid=""
cleanup() {
  [[ -n "$pid" ]] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT

secret="sdk-cpp-bot-secret-0123456789abcdef"
cat >"$dir/parley.toml" <<TOML
[server]
listen = "127.0.0.1:0"
tcp_listen = "127.0.0.1:0"
data_dir = "$dir/data"
log_level = "warn"

[tenants.demo]
secret = "$secret"
api_key = "sdk-cpp-bot-key"
TOML
"$server" serve --config "$dir/parley.toml" >"$dir/server.log" 2>&1 &
pid=$!
for _ in $(seq 1 200); do
  grep -q "parley ready" "$dir/server.log" && break
  kill -0 "$pid" 2>/dev/null || { cat "$dir/server.log"; exit 1; }
  sleep 0.05
done
http=$(grep -o 'parley ready http=[0-9]*' "$dir/server.log" | grep -o '[0-9]*$')
tcp=$(grep -o ' tcp=[0-9]*' "$dir/server.log" | grep -o '[0-9]*$')
[[ -n "$http" && -n "$tcp" ]] || { echo "no ready line"; cat "$dir/server.log"; exit 1; }

b64url() { base64 -w0 | tr '+/' '-_' | tr -d '='; }
token() { # an HS256 client token (PROTOCOL.md "Connecting") for user $1
  local h p s
  h=$(printf '{"alg":"HS256","typ":"JWT"}' | b64url)
  p=$(printf '{"sub":"%s","tenant":"demo","exp":%d}' "$1" $(($(date +%s) + 3600)) | b64url)
  s=$(printf '%s.%s' "$h" "$p" | openssl dgst -sha256 -hmac "$secret" -binary | b64url)
  printf '%s.%s.%s' "$h" "$p" "$s"
}

n=200
"$bot" --url "ws://127.0.0.1:$http/v1/ws" --token "$(token ws-bot)" --channel chat:bots \
  --count $n --expect $((2 * n)) >"$dir/ws.out" 2>"$dir/ws.err" &
ws=$!
"$bot" --url "tcp://127.0.0.1:$tcp" --token "$(token tcp-bot)" --channel chat:bots \
  --count $n --expect $((2 * n)) >"$dir/tcp.out" 2>"$dir/tcp.err" &
tc=$!
status=0
wait $ws || status=1
wait $tc || status=1
for t in ws tcp; do
  echo "$t bot: $(cat "$dir/$t.out")"
  cat "$dir/$t.err"
done
expected="\"published\":$n,\"received\":$((2 * n)),\"own\":$n,\"last_seq\":$((2 * n))"
grep -q "$expected" "$dir/ws.out" || status=1
grep -q "$expected" "$dir/tcp.out" || status=1
[[ $status -eq 0 ]] || { echo "server log:"; cat "$dir/server.log"; }
exit $status
