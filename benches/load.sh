#!/usr/bin/env bash
# Load test: engaged against a bare hyper + rustls + redb baseline, same machine, same
# TLS, loopback only, bounded in time. Prints req/s, p50, p99 and ratios from one run.
#   bash benches/load.sh                 # 10 s per case
#   DURATION=30s bash benches/load.sh
# Needs wrk (apt-get install wrk); installs it when run as root on Debian.
set -euo pipefail
cd "$(dirname "$0")/.."
duration=${DURATION:-10s}
connections=64

if ! command -v wrk >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    apt-get install -y -qq wrk >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq wrk >/dev/null; }
  else
    echo "wrk is required (apt-get install wrk)"; exit 1
  fi
fi

cargo build -q --release --bin engaged
cargo bench -q --no-run --bench baseline 2>/dev/null
baseline_bin=$(ls -t target/release/deps/baseline-* | grep -v '\.d$' | head -n 1)
engaged=target/release/engaged

work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

"$engaged" --data-dir "$work" org create load >/dev/null 2>&1
key=$("$engaged" --data-dir "$work" key create --org load --scope write 2>/dev/null)
port=$(free_port)
"$engaged" --data-dir "$work" serve --listen "127.0.0.1:$port" 2>"$work/engaged.log" &
engaged_pid=$!; pids+=("$engaged_pid")
base="https://127.0.0.1:$port"
for _ in $(seq 1 100); do curl -skf "$base/healthz" >/dev/null && break; sleep 0.1; done

bport=$(free_port)
ENGAGED_BASELINE_LISTEN="127.0.0.1:$bport" ENGAGED_BASELINE_DIR="$work" ENGAGED_BASELINE_KEY="$key" "$baseline_bin" >"$work/baseline.log" 2>&1 &
pids+=("$!")
bbase="https://127.0.0.1:$bport"
for _ in $(seq 1 100); do curl -sk -o /dev/null "$bbase/call/call-1" && break; sleep 0.1; done

# Seed: a lead with a call, then as many leads as 64 writers create in 5 s.
curl -skf -H "x-api-key: $key" -H 'content-type: application/json' -d '{"id": "lead-1", "phone": "+15551234567"}' "$base/v1/leads" >/dev/null
curl -skf -H "x-api-key: $key" -H 'content-type: application/json' -X PUT \
  -d '{"leadId": "lead-1", "direction": "OUTBOUND", "callStatus": "COMPLETE", "durationSeconds": 42}' "$base/v1/calls/call-1" >/dev/null
cat >"$work/post.lua" <<'LUA'
wrk.method = "POST"
wrk.headers["content-type"] = "application/json"
wrk.body = os.getenv("BODY")
LUA
BODY='{"firstName": "Load"}' wrk -t2 -c"$connections" -d5s -s "$work/post.lua" -H "x-api-key: $key" "$base/v1/leads" >/dev/null
leads=$(curl -sk -G -H "x-api-key: $key" --data-urlencode 'updatedSince=1970-01-01T00:00:00Z' --data-urlencode 'limit=1000' "$base/v1/leads" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["leads"]))')

results="$work/results"
: >"$results"
# run NAME CONNECTIONS URL [lua]: one bounded wrk run, its req/s, p50 and p99 in ms.
run() {
  local name=$1 conns=$2 url=$3 script=${4:-}
  local out threads=2
  [ "$conns" -lt 2 ] && threads=1
  if [ -n "$script" ]; then
    out=$(wrk -t"$threads" -c"$conns" -d"$duration" --latency -s "$script" -H "x-api-key: $key" "$url")
  else
    out=$(wrk -t"$threads" -c"$conns" -d"$duration" --latency -H "x-api-key: $key" "$url")
  fi
  python3 - "$name" "$out" >>"$results" <<'PY'
import re, sys
name, out = sys.argv[1], sys.argv[2]
def ms(label):
    m = re.search(r"^\s*" + label + r"%\s+([\d.]+)(us|ms|s)\s*$", out, re.M)
    if not m: return float("nan")
    v, unit = float(m.group(1)), m.group(2)
    return v / 1000 if unit == "us" else v * 1000 if unit == "s" else v
rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
print(f"{name}\t{rps:.0f}\t{ms('50'):.2f}\t{ms('99'):.2f}\t{errors.group(1) if errors else 0}")
PY
}

run "engaged GET /v1/calls/{id}" "$connections" "$base/v1/calls/call-1"
run "baseline GET /call/{id}" "$connections" "$bbase/call/call-1"
run "engaged GET /v1/leads?limit=100" "$connections" "$base/v1/leads?updatedSince=1970-01-01T00%3A00%3A00Z&limit=100"
rss_kib=$(awk '/VmRSS/ {print $2}' "/proc/$engaged_pid/status")
export BODY='{"type": "CUSTOM", "id": "load", "data": {"n": 1}}'
run "engaged POST events, 64 conns" "$connections" "$base/v1/leads/lead-1/events" "$work/post.lua"
run "engaged POST events, 1 conn" 1 "$base/v1/leads/lead-1/events" "$work/post.lua"
export BODY='{"type": "CUSTOM", "id": "load", "data": {"n": 1}}'
run "baseline POST group commit, 64 conns" "$connections" "$bbase/write" "$work/post.lua"

python3 - "$results" "$rss_kib" "$leads" "$duration" <<'PY'
import sys
rows = [line.rstrip("\n").split("\t") for line in open(sys.argv[1])]
r = {name: (float(rps), float(p50), float(p99), int(err)) for name, rps, p50, p99, err in rows}
def ratio(a, b): return r[a][0] / r[b][0] if r[b][0] else float("nan")
print(f"one run, {sys.argv[4]} per case, 64 connections unless noted, {sys.argv[3]} leads seeded (first page counted, max 1000)")
print(f"{'case':42} {'req/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'non-2xx':>8}")
for name, (rps, p50, p99, err) in r.items():
    print(f"{name:42} {rps:9.0f} {p50:8.2f} {p99:8.2f} {err:8d}")
print()
print(f"GET call / baseline GET:               {ratio('engaged GET /v1/calls/{id}', 'baseline GET /call/{id}'):.2f}  (target >= 0.80)")
print(f"GET leads page / baseline GET:         {ratio('engaged GET /v1/leads?limit=100', 'baseline GET /call/{id}'):.2f}  (target >= 0.15)")
print(f"POST events 64 conns / 1 conn:         {ratio('engaged POST events, 64 conns', 'engaged POST events, 1 conn'):.1f}x (target >= 10)")
print(f"POST events 64 conns / baseline write: {ratio('engaged POST events, 64 conns', 'baseline POST group commit, 64 conns'):.2f}  (target >= 0.50)")
print(f"engaged resident memory after the GET load: {int(sys.argv[2]) / 1024:.0f} MiB (target <= 200)")
PY
