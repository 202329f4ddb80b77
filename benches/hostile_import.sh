#!/usr/bin/env bash
# Hostile imports (issue 29): the release server's RSS above idle while it takes
#   1. an all-refused CSV of 100 MB (every row names an unknown profile, ~1 KB a row),
#   2. a file of 100,000 columns (refused at its header, 400),
#   3. a chunked stream of 2 GiB, no Content-Length (cut at max_import_bytes, 413),
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
  printf '%-28s status %s  %6.1f s  peak RSS +%d MiB above idle  (%s)\n' "$name" "$status" \
    "$(echo "$end - $start" | bc)" "$(((peak - idle) / 1024))" "$(head -c 160 "$work/$name.body")"
}

echo
echo "case                         answer  time     memory"
attack "all-refused ${refused_mb} MB CSV" --data-binary "@$work/refused.csv" "$url/v1/leads/import"
attack "${columns} columns" --data-binary "@$work/columns.csv" "$url/v1/leads/import"
# 100 KB lines: every one refused as too long without a write, so the stream reaches the
# cap as fast as the server reads.
python3 -c "
import sys
line = b'y' * (100 * 1024 - 1) + b'\n'
out = sys.stdout.buffer
out.write(b'firstName,phone\n')
for _ in range($stream_mb * 1024 * 1024 // len(line)):
    out.write(line)
" 2>/dev/null | attack "${stream_mb} MiB chunked stream" -X POST -T - \
  "$url/v1/leads/import?dryRun=true"
echo
echo "(load before: $(cut -d' ' -f1-3 /proc/loadavg); target: at most +128 MiB above idle each)"
