#!/usr/bin/env bash
# Load test: engaged against a bare hyper + rustls + redb baseline (benches/baseline.rs),
# same machine, same TLS, loopback only, bounded in time. Prints req/s, p50, p99 and the
# ratios the targets of issues 7 and 48 are stated in, from one run.
#
#   bash benches/load.sh                  # 10k leads, 10 s per case (about 2 minutes after the build)
#   BIG=1 bash benches/load.sh            # 1M leads and up to 10M events, seeding bounded by SEED_BUDGET
#   DURATION=30s LEADS=100000 bash benches/load.sh
#
# Environment: DURATION (wrk -d, default 10s), CONNECTIONS (64), LEADS (10000; BIG: 1000000),
# EVENTS (0; BIG: 10000000), CALLS (1000), SEED_BUDGET (seconds of seeding, default 600),
# WEBHOOKS=0 skips the webhook bench; SERVER_LOG=FILE keeps the server's log there (with
# RUST_LOG=info,engaged::store::wal=debug it times every checkpoint's commit and sync).
# Needs wrk (apt-get install wrk; installed when run as root on Debian), curl and python3.
set -euo pipefail
cd "$(dirname "$0")/.."

duration=${DURATION:-10s}
connections=${CONNECTIONS:-64}
if [ "${BIG:-0}" = 1 ]; then
  leads=${LEADS:-1000000}; events=${EVENTS:-10000000}
else
  leads=${LEADS:-10000}; events=${EVENTS:-0}
fi
calls=${CALLS:-1000}
seed_budget=${SEED_BUDGET:-600}

if ! command -v wrk >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    apt-get install -y -qq wrk >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq wrk >/dev/null; }
  else
    echo "wrk is required (apt-get install wrk)"; exit 1
  fi
fi

# One build: the server, the baseline, the seeder and the webhook bench.
echo "building (cargo build --release)..." >&2
build_json=$(mktemp)
cargo build --release --bin engaged --bench baseline --bench seed --bench webhooks \
  --message-format=json-render-diagnostics >"$build_json"
exe() {
  python3 - "$build_json" "$1" <<'PY'
import json, sys
path = None
for line in open(sys.argv[1]):
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == sys.argv[2] \
       and "bench" in m["target"]["kind"]:
        path = m["executable"]
print(path or "")
PY
}
engaged=target/release/engaged
baseline_bin=$(exe baseline); seed_bin=$(exe seed); webhooks_bin=$(exe webhooks)
rm -f "$build_json"
for b in "$baseline_bin" "$seed_bin" "$webhooks_bin"; do [ -x "$b" ] || { echo "missing bench binary"; exit 1; }; done

work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  if [ -n "${SERVER_LOG:-}" ] && [ -f "$work/engaged.log" ]; then cp "$work/engaged.log" "$SERVER_LOG"; fi
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
load_before=$(cut -d' ' -f1-3 /proc/loadavg)

# Seed while no server runs: the organization and key by the engaged CLI, then leads,
# calls and events through the library in large write jobs (benches/seed.rs).
"$engaged" --data-dir "$work" init 2>/dev/null
"$engaged" --data-dir "$work" org create load >/dev/null 2>&1
key=$("$engaged" --data-dir "$work" key create --org load --scope write 2>/dev/null)
echo "seeding $leads leads, $calls calls, $events events (budget ${seed_budget} s)..." >&2
ENGAGED_SEED_DB="$work/engaged.redb" ENGAGED_SEED_KEY="$key" ENGAGED_SEED_LEADS="$leads" \
  ENGAGED_SEED_CALLS="$calls" ENGAGED_SEED_EVENTS="$events" ENGAGED_SEED_BUDGET_SECS="$seed_budget" \
  "$seed_bin" | tee "$work/seed.log" >&2

port=$(free_port)
"$engaged" --data-dir "$work" serve --listen "127.0.0.1:$port" 2>"$work/engaged.log" &
engaged_pid=$!; pids+=("$engaged_pid")
base="https://127.0.0.1:$port"
for _ in $(seq 1 300); do curl -skf "$base/healthz" >/dev/null && break; sleep 0.1; done
curl -skf "$base/healthz" >/dev/null || { echo "engaged did not start"; cat "$work/engaged.log"; exit 1; }

bport=$(free_port)
ENGAGED_BASELINE_LISTEN="127.0.0.1:$bport" ENGAGED_BASELINE_DIR="$work" ENGAGED_BASELINE_KEY="$key" \
  "$baseline_bin" >"$work/baseline.log" 2>&1 &
pids+=("$!")
bbase="https://127.0.0.1:$bport"
for _ in $(seq 1 100); do curl -skf -H "x-api-key: $key" -o /dev/null "$bbase/call/call-1" && break; sleep 0.1; done
curl -skf -H "x-api-key: $key" -o /dev/null "$base/v1/calls/call-1" || { echo "call-1 missing"; exit 1; }

# POST bodies: a fresh event id per request, spread over the seeded leads.
post_lua=benches/post.lua

results="$work/results"
: >"$results"
# run NAME CONNECTIONS URL [lua]: one bounded wrk run; appends name, req/s, p50, p99, non-2xx.
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
sockerr = re.search(r"Socket errors: (.*)", out)
print(f"{name}\t{rps:.0f}\t{ms('50'):.2f}\t{ms('99'):.2f}\t{errors.group(1) if errors else 0}")
if sockerr: print(f"{name}: socket errors: {sockerr.group(1)}", file=sys.stderr)
PY
  echo "  done: $name" >&2
}

echo "load: $duration per case, $connections connections..." >&2
run "engaged GET /v1/calls/{id}" "$connections" "$base/v1/calls/call-1"
run "baseline GET /call/{id}" "$connections" "$bbase/call/call-1"
run "engaged GET /v1/leads?limit=100" "$connections" "$base/v1/leads?updatedSince=1970-01-01T00%3A00%3A00Z&limit=100"
rss_kib=$(awk '/^VmRSS/ {print $2}' "/proc/$engaged_pid/status")
hwm_kib=$(awk '/^VmHWM/ {print $2}' "/proc/$engaged_pid/status")
# Durable writes depend on fsync latency, which drifts on shared disks: each ratio's two
# cases run back to back (1 conn, 64 conns, baseline 64 conns, baseline 1 conn).
export LEADS="$leads"
# A warm-up of each writer (3 s of POST, not measured): a fresh start's write-ahead log
# grows in zeroed steps during its first seconds of writes, then writes in place.
warm() { wrk -t2 -c"$connections" -d3s -s "$post_lua" -H "x-api-key: $key" "$1" >/dev/null; }
TARGET=engaged RUN=w warm "$base/"
TARGET=baseline RUN=w warm "$bbase/"
TARGET=engaged RUN=c1 run "engaged POST events, 1 conn" 1 "$base/" "$post_lua"
TARGET=engaged RUN=c64 run "engaged POST events, $connections conns" "$connections" "$base/" "$post_lua"
TARGET=baseline RUN=b64 run "baseline POST group commit, $connections conns" "$connections" "$bbase/" "$post_lua"
TARGET=baseline RUN=b1 run "baseline POST group commit, 1 conn" 1 "$bbase/" "$post_lua"
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

# The servers stop before the webhook bench, which runs its own server and receiver.
for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
pids=()
webhooks_out=""
if [ "${WEBHOOKS:-1}" != 0 ]; then
  echo "webhooks bench..." >&2
  webhooks_out=$(timeout 300 "$webhooks_bin" --bench 2>&1 || true)
fi

python3 - "$results" "$rss_kib" "$hwm_kib" "$work/seed.log" "$duration" "$connections" \
  "$load_before" "$load_after" "$webhooks_out" <<'PY'
import re, sys, os
results, rss, hwm, seed_log, duration, conns, load_before, load_after, webhooks = sys.argv[1:10]
rows = [line.rstrip("\n").split("\t") for line in open(results)]
r = {name: (float(rps), float(p50), float(p99), int(err)) for name, rps, p50, p99, err in rows}
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
seed = open(seed_log).read().strip()
print(f"machine: {os.cpu_count()} cores, {cpu}; load average before {load_before}, after {load_after}")
print(f"seed: {'; '.join(seed.splitlines())}")
print(f"wrk, {duration} per case, {conns} keep-alive TLS connections unless noted, loopback")
print()
get_c, get_b = "engaged GET /v1/calls/{id}", "baseline GET /call/{id}"
leads_c = "engaged GET /v1/leads?limit=100"
post_c, post_1 = f"engaged POST events, {conns} conns", "engaged POST events, 1 conn"
post_b, post_b1 = f"baseline POST group commit, {conns} conns", "baseline POST group commit, 1 conn"
ref = {get_c: get_b, leads_c: get_b, post_c: post_b, post_1: post_b1}
print(f"{'case':42} {'req/s':>8} {'p50 ms':>7} {'p99 ms':>7} {'non-2xx':>7} {'/ baseline':>10}")
order = [get_c, get_b, leads_c, post_c, post_1, post_b, post_b1]
for name in order + [n for n in r if n not in order]:
    if name not in r: continue
    rps, p50, p99, err = r[name]
    ratio = f"{rps / r[ref[name]][0]:.2f}" if name in ref and r[ref[name]][0] else ""
    print(f"{name:42} {rps:8.0f} {p50:7.2f} {p99:7.2f} {err:7d} {ratio:>10}")
print()
def ratio(a, b): return r[a][0] / r[b][0] if r[b][0] else float("nan")
def mark(ok): return "met" if ok else "MISSED"
checks = []
x = ratio(get_c, get_b); checks.append((f"GET call / baseline GET: {x:.2f} (>= 0.80)", x >= 0.80))
p99 = r[get_c][2]; checks.append((f"GET call p99: {p99:.2f} ms (<= 5)", p99 <= 5))
x = ratio(leads_c, get_b); checks.append((f"GET leads page / baseline GET: {x:.2f} (>= 0.30)", x >= 0.30))
x = ratio(post_c, post_1); checks.append((f"POST events {conns} conns / 1 conn: {x:.1f}x (>= 10)", x >= 10))
x = ratio(post_c, post_b); checks.append((f"POST events {conns} conns / baseline writer: {x:.2f} (>= 0.50)", x >= 0.50))
# The durable writes' tail: no checkpoint may stall them (issue 48).
for mine, theirs, label in ((post_1, post_b1, "1 conn"), (post_c, post_b, f"{conns} conns")):
    p, b = r[mine][2], r[theirs][2]
    checks.append((f"POST events p99, {label}: {p:.2f} ms / baseline {b:.2f} ms: {p / b:.1f}x (<= 3x)", p <= 3 * b))
    checks.append((f"POST events p99, {label}: {p:.2f} ms (<= 10)", p <= 10))
m = re.search(r"= (\d+) deliveries/s", webhooks); d = float(m.group(1)) if m else float("nan")
checks.append((f"webhooks: {d:.0f} deliveries/s (>= 2000)", d >= 2000))
m = re.search(r"p50 ([\d.]+) ms", webhooks); p = float(m.group(1)) if m else float("nan")
checks.append((f"webhooks commit-to-delivery p50: {p:.2f} ms (<= 20)", p <= 20))
mib = int(hwm) / 1024
checks.append((f"engaged resident memory under the GET load: {int(rss) / 1024:.0f} MiB, peak {mib:.0f} MiB (<= 200)", mib <= 200))
for text, ok in checks:
    print(f"{text:78} {mark(ok)}")
if webhooks:
    print()
    print(webhooks.strip())
PY
