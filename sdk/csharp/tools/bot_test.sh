#!/usr/bin/env bash
# ctest csharp_sdk_bot: the real server on port 0 and two C# bots on one
# channel, u1 over WebSocket and u2 over raw TCP (server.tcp_listen); each
# publishes 150 messages and must see all 300, seqs rising by one, every
# publish acknowledged (examples/bot/Bot.cs checks and exits non-zero otherwise).
#   tools/bot_test.sh <parley binary> <parley-bot.exe>
set -euo pipefail
parley="$1"
bot="$2"
dir="$(mktemp -d /tmp/parley-cs-bot.XXXXXX)"
server_pid=
cleanup() {
  [[ -n $server_pid ]] && kill -9 "$server_pid" 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT
secret="cs-bot-secret-0123456789abcdef0123"
cat >"$dir/parley.toml" <<TOML
[server]
listen = "127.0.0.1:0"
tcp_listen = "127.0.0.1:0"
store = "embedded"
data_dir = "$dir/data"
log_level = "warn"

[tenants.demo]
secret = "$secret"
api_key = "cs-bot-key"
TOML
"$parley" serve --config "$dir/parley.toml" >"$dir/server.log" 2>&1 &
server_pid=$!
port=
tcp_port=
for _ in $(seq 1 200); do
  port="$(sed -n 's/.*parley ready http=\([0-9]*\).*/\1/p' "$dir/server.log")"
  tcp_port="$(sed -n 's/.*parley ready http=[0-9]* tcp=\([0-9]*\).*/\1/p' "$dir/server.log")"
  [[ -n $port ]] && break
  kill -0 "$server_pid" 2>/dev/null || { cat "$dir/server.log"; exit 1; }
  sleep 0.1
done
[[ -n $port ]] || { echo "the server did not start"; cat "$dir/server.log"; exit 1; }

b64url() { openssl base64 -A | tr '+/' '-_' | tr -d '='; }
token() { # an HS256 client token for user $1 (PROTOCOL.md "Connecting")
  local h p s
  h="$(printf '{"alg":"HS256","typ":"JWT"}' | b64url)"
  p="$(printf '{"sub":"%s","tenant":"demo","exp":%d}' "$1" $(( $(date +%s) + 3600 )) | b64url)"
  s="$(printf '%s.%s' "$h" "$p" | openssl dgst -sha256 -hmac "$secret" -binary | b64url)"
  printf '%s.%s.%s' "$h" "$p" "$s"
}

url="ws://127.0.0.1:$port/v1/ws"
mono "$bot" --url "$url" --token "$(token u1)" --channel chat:bots --count 150 --expect 300 --since 0 \
  --timeout-s 60 >"$dir/u1.out" &
bot1=$!
mono "$bot" --url "tcp://127.0.0.1:$tcp_port" --token "$(token u2)" --channel chat:bots --count 150 --expect 300 --since 0 \
  --timeout-s 60 >"$dir/u2.out" &
bot2=$!
status=0
wait "$bot1" || status=1
wait "$bot2" || status=1
cat "$dir/u1.out" "$dir/u2.out"
for u in u1 u2; do
  grep -q '"ok":true' "$dir/$u.out" || status=1
  grep -q '"received":300' "$dir/$u.out" || status=1
done
if ((status == 0)); then echo "2 passed, 0 failed"; else echo "0 passed, 2 failed"; cat "$dir/server.log"; fi
exit $status
