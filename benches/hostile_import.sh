#!/usr/bin/env bash
# Hostile imports (issue 29): the release server's RSS above idle while it takes
#   1. an all-refused CSV of 100 MB (every row names an unknown profile, ~1 KB a row),
#   2. a file of 100,000 columns (refused at its header, 400),
#   3. a chunked stream of 2 GiB, no Content-Length, of the same refused rows (cut at
#      max_import_bytes, 413; curl 7.88 over HTTP/2 reports the stream reset that follows
#      the answer as error 92, so the server's own count of answers is printed too),
# each through POST /v1/leads/import over loopback TLS, one after the other, each
# bounded in time (curl --max-time). RSS is sampled every 50 ms from /proc; the
# target is at most +128 MiB above idle for each.
#
#   bash benches/hostile_import.sh          # about 2 minutes after the build
#
# Environment: REFUSED_MB (100), COLUMNS (100000), STREAM_MB (2048), MAX_TIME (600 s a case).
# Needs curl and python3; Linux (/proc).
set -euo pipefail
cd "$(dirname "$0")/.."

refused_mb=${REFUSED_MB:-100}
columns=${COLUMNS:-100000}
stream_mb=${STREAM_MB:-2048}
max_time=${MAX_TIME:-600}

echo "building (cargo build --release --bin engaged)..." >&2
cargo build --release --bin engaged -q
engaged=target/release/engaged

work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

"$engaged" --data-dir "$work/data" init 2>/dev/null
"$engaged" --data-dir "$work/data" org create hostile >/dev/null 2>&1
key=$("$engaged" --data-dir "$work/data" key create --org hostile --scope write 2>/dev/null)
admin=$("$engaged" --data-dir "$work/data" key create --org hostile --scope admin 2>/dev/null)

echo "writing the files..." >&2
python3 - "$work" "$refused_mb" "$columns" <<'PY'
import sys
work, mb, columns = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
pad = "x" * 960
with open(f"{work}/refused.csv", "w") as f:
    f.write("firstName,phone,profile,notes\n")
    i, size = 0, 0
    while size < mb * 1024 * 1024:
        line = f"P{i},+1737{i % 10_000_000:07d},nope,{pad}\n"
        f.write(line)
        size += len(line)
        i += 1
with open(f"{work}/columns.csv", "w") as f:
    f.write(",".join(f"c{i}" for i in range(columns)) + "\n")
    f.write(",".join("v" for _ in range(columns)) + "\n")
PY

port=$(free_port)
"$engaged" --data-dir "$work/data" serve --listen "127.0.0.1:$port" 2>"$work/engaged.log" &
server=$!
pids+=("$server")
url="https://127.0.0.1:$port"
for _ in $(seq 1 100); do
  curl -sk "$url/healthz" >/dev/null 2>&1 && break
  sleep 0.1
done
rss() { awk '/^VmRSS:/ {print $2}' "/proc/$server/status"; }
sleep 1
idle=$(rss)
echo "idle RSS: $((idle / 1024)) MiB" >&2

# Runs curl with the remaining arguments while sampling the server's RSS; prints
# `status seconds peak_above_idle_MiB`.
attack() {
  local name=$1; shift
  local samples="$work/$name.rss"
  : >"$samples"
  ( while kill -0 "$server" 2>/dev/null; do rss >>"$samples"; sleep 0.05; done ) &
  local sampler=$!
  local start end status
  start=$(date +%s.%N)
  status=$(curl -sk -o "$work/$name.body" -w '%{http_code}' --max-time "$max_time" \
    -H "x-api-key: $key" -H 'content-type: text/csv' "$@" || true)
  end=$(date +%s.%N)
  kill "$sampler" 2>/dev/null || true
  wait "$sampler" 2>/dev/null || true
  local peak
  peak=$(sort -n "$samples" | tail -1)
  local said
  said=$(python3 -c '
import json, sys
try:
    body = json.load(open(sys.argv[1]))
except Exception:
    print("no answer read"); sys.exit()
if "message" in body: print(body["message"])
else: print("refusedCount %s, %s refusals listed" % (body.get("refusedCount"), len(body.get("refused", []))))
' "$work/$name.body")
  printf '%-28s %s  %6.1f s  peak RSS +%d MiB above idle  (%s)\n' "$name" "$status" \
    "$(echo "$end - $start" | bc)" "$(((peak - idle) / 1024))" "$said"
}

echo
echo "case                         answer  time     memory"
attack "all-refused ${refused_mb} MB CSV" --data-binary "@$work/refused.csv" "$url/v1/leads/import"
attack "${columns} columns" --data-binary "@$work/columns.csv" "$url/v1/leads/import"
python3 -c "
import sys
out = sys.stdout.buffer
out.write(b'firstName,phone,profile,notes\n')
pad = b'x' * 960
size, i = 0, 0
while size < $stream_mb * 1024 * 1024:
    line = b'S%d,+1737%07d,nope,%s\n' % (i, i % 10_000_000, pad)
    out.write(line)
    size += len(line)
    i += 1
" 2>/dev/null | attack "${stream_mb} MiB chunked stream" -X POST -T - \
  "$url/v1/leads/import?dryRun=true" || true  # the writer is cut off at the cap
echo
echo "the server's answers to POST /v1/leads/import, by status (from /metrics):"
curl -sk -H "x-api-key: $admin" "$url/metrics" | grep '^engaged_requests_total{route="import_leads"' || true
echo "(load before: $(cut -d' ' -f1-3 /proc/loadavg); target: at most +128 MiB above idle each)"
