#!/usr/bin/env bash
# Hostile load against the release binary, loopback only, bounded in time (about
# 2 minutes after the build with the defaults): parallel sign-ins, slow-body
# connections, one organization's import and campaign pause beside another's writes.
# See benches/hostile.py for what each attack measures and its target.
#
#   bash benches/hostile.sh
#   ROWS=20000 SECONDS_PER_ATTACK=10 SLOW_CONNECTIONS=256 bash benches/hostile.sh
#
# Needs python3 and curl. The slow clients come from 127.0.2.1-5, the sign-ins from
# 127.0.1.x and the probes from 127.0.0.10: Linux routes all of 127/8 to loopback.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "building (cargo build --release --bin engaged)..." >&2
cargo build --release --bin engaged >&2
engaged=$PWD/target/release/engaged

work=$(mktemp -d)
server_pid=""
cleanup() {
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
e() { "$engaged" --data-dir "$work" "$@"; }
e init >/dev/null
e org create a >/dev/null
e org create b >/dev/null
key_a=$(e key create --org a --scope admin --name bench)
key_b=$(e key create --org b --scope write --name bench)
admin_password=$(python3 -c 'import secrets; print(secrets.token_hex(12))')
printf '%s\n' "$admin_password" | e user create --org a --email ops@a.example --name Ops --role admin --password-stdin >/dev/null
# The slow clients alone must not be refused by the per-address cap before the body
# phase's bounds are what is measured: the defaults (1024 connections, 256 per address).
RUST_LOG=warn "$engaged" --data-dir "$work" serve --listen "127.0.0.1:$port" 2>"$work/server.log" &
server_pid=$!
for _ in $(seq 1 100); do
  curl -sf --cacert "$work/tls/cert.pem" "https://localhost:$port/healthz" >/dev/null 2>&1 && break
  sleep 0.1
done
curl -sf --cacert "$work/tls/cert.pem" -X PUT -H "x-api-key: $key_a" -H 'content-type: application/json' \
  "https://localhost:$port/v1/profiles/solar" \
  -d '{"instructions":"You are Sam.","cadence":[{"after":"7d","channel":"sms","text":"Hi {{firstName}}"}]}' >/dev/null

PORT=$port CAFILE=$work/tls/cert.pem SERVER_PID=$server_pid KEY_A=$key_a KEY_B=$key_b \
  ADMIN_PASSWORD=$admin_password timeout 1800 python3 benches/hostile.py
