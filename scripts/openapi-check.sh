#!/usr/bin/env bash
# Checks openapi/openapi.json against the real server:
#   1. validates the document (PyPI openapi-spec-validator);
#   2. generates the Python client (openapi-python-client, with openapi/python-client.yaml)
#      and, when npx is there, the TypeScript types (openapi-typescript): any warning,
#      or an operation left out, fails the check; every generated Python module must
#      import;
#   3. starts `engaged serve` on a free loopback port over plain HTTP with a fresh data
#      directory, seeds the records the document's examples name;
#   4. runs a smoke session through the generated Python client in an organization of
#      its own (scripts/openapi-smoke.py: leads with paging, events by type, tags,
#      unsubscribe, DNC, a call with a transcript, a recording, search, a CSV and an
#      NDJSON import, ...), recording every JSON answer; with npx, `tsc --strict` then
#      checks each recorded answer against the generated TypeScript type of its
#      operation and status, and docs/api.md's `PUT /v1/calls` example against the
#      request body's type;
#   5. runs a bounded schemathesis pass with an admin key. Any 5xx, any response
#      (status, content type, headers or body) that the document does not describe, or
#      an operation that answers without a key, fails the check.
#
#   bash scripts/openapi-check.sh           # what CI runs: ~2,500 cases, seed 1, about a minute
#   bash scripts/openapi-check.sh --long    # ~6,500 cases, a new seed each run, about 4 minutes
#
# Everything stays on loopback: generated webhook and compliance-service URLs are
# rewritten to a closed loopback port before they reach the server. Python 3.10+ with
# venv is needed; the tools go to target/openapi-venv, target/openapi-client-venv and
# (typescript, with npm) target/openapi-tsc. ENGAGED_BIN=path skips the build; so does a
# target/debug/engaged newer than every file of src/.
# A failed run keeps its temporary directory (server log, schemathesis state) and says
# where.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

mode=bounded
case "${1:-}" in
  "") ;;
  --long) mode=long ;;
  *) echo "usage: $0 [--long]" >&2; exit 2 ;;
esac
if [ "$mode" = long ]; then
  examples=150 # per operation and phase: about 6,500 cases, 4 minutes
  budget=3600
  seed=() # a new seed each time; schemathesis prints it for --seed to replay
else
  examples=25 # about 2,500 cases, under a minute
  budget=300
  seed=(--seed 1)
fi

# Versions known to install on Python 3.11 from PyPI.
pins=("openapi-spec-validator==0.9.0" "schemathesis==4.32.5")
venv=$root/target/openapi-venv
if [ "$(cat "$venv/.pins" 2>/dev/null)" != "${pins[*]}" ]; then
  command -v python3 >/dev/null || { echo "python3 (3.10+, with venv) is required" >&2; exit 1; }
  rm -rf "$venv"
  python3 -m venv "$venv" || { echo "python3 -m venv failed (Debian/Ubuntu: apt-get install python3-venv)" >&2; exit 1; }
  "$venv/bin/pip" install --quiet --disable-pip-version-check "${pins[@]}"
  echo "${pins[*]}" > "$venv/.pins"
fi

"$venv/bin/openapi-spec-validator" openapi/openapi.json

# Generated clients keep every operation and schema: openapi-python-client (its own
# venv, pinned) must generate without a single warning, and one module per operation.
# With npx at hand, openapi-typescript too (pinned; npm's cache keeps it after once).
client_pin="openapi-python-client==0.29.1"
client_venv=$root/target/openapi-client-venv
if [ "$(cat "$client_venv/.pins" 2>/dev/null)" != "$client_pin" ]; then
  rm -rf "$client_venv"
  python3 -m venv "$client_venv"
  "$client_venv/bin/pip" install --quiet --disable-pip-version-check "$client_pin"
  echo "$client_pin" > "$client_venv/.pins"
fi
clients=$(mktemp -d)
operations=$(python3 -c 'import json, sys
doc = json.load(open(sys.argv[1]))
print(sum(1 for item in doc["paths"].values() for k in item if k != "parameters"))' openapi/openapi.json)
(cd "$clients" && "$client_venv/bin/openapi-python-client" generate --path "$root/openapi/openapi.json" \
  --config "$root/openapi/python-client.yaml" --meta none --output-path engaged_client >"$clients/python.log" 2>&1) || {
  cat "$clients/python.log" >&2; echo "openapi-python-client failed" >&2; rm -rf "$clients"; exit 1; }
if grep -v '^Generating ' "$clients/python.log" | grep -q .; then
  cat "$clients/python.log" >&2; echo "openapi-python-client warned (above)" >&2; rm -rf "$clients"; exit 1
fi
generated=$(find "$clients/engaged_client/api" -name '*.py' ! -name '__init__.py' | wc -l)
if [ "$generated" -ne "$operations" ]; then
  echo "openapi-python-client generated $generated of $operations operations" >&2; rm -rf "$clients"; exit 1
fi
# Every generated module imports (a module that does not is a client nobody can use).
(cd "$clients" && "$client_venv/bin/python" - <<'PY'
import importlib, pkgutil, sys
import engaged_client
failed = []
count = 0
for module in pkgutil.walk_packages(engaged_client.__path__, "engaged_client."):
    count += 1
    try:
        importlib.import_module(module.name)
    except Exception as e:  # any failure to import is the finding
        failed.append(f"{module.name}: {type(e).__name__}: {e}")
if failed:
    sys.exit("generated modules that do not import:\n" + "\n".join(failed))
print(f"all {count} generated Python modules import")
PY
) || { rm -rf "$clients"; exit 1; }
if command -v npx >/dev/null; then
  npx --yes openapi-typescript@7.10.1 openapi/openapi.json -o "$clients/api.ts" >"$clients/ts.log" 2>&1 || {
    cat "$clients/ts.log" >&2; echo "openapi-typescript failed" >&2; rm -rf "$clients"; exit 1; }
  if grep -qiE 'warn|error' "$clients/ts.log"; then
    cat "$clients/ts.log" >&2; echo "openapi-typescript warned (above)" >&2; rm -rf "$clients"; exit 1
  fi
  # An optional member stays optional: a `default` would make it required.
  grep -q 'recordOnly?: boolean' "$clients/api.ts" || {
    echo "openapi-typescript made recordOnly required" >&2; rm -rf "$clients"; exit 1; }
  # `tsc --strict` for the recorded answers (below); pinned, installed once.
  tsc_pin="typescript@5.9.3"
  tsc_dir=$root/target/openapi-tsc
  if [ "$(cat "$tsc_dir/.pins" 2>/dev/null)" != "$tsc_pin" ]; then
    rm -rf "$tsc_dir"
    mkdir -p "$tsc_dir"
    npm install --silent --no-audit --no-fund --prefix "$tsc_dir" "$tsc_pin" >/dev/null
    echo "$tsc_pin" > "$tsc_dir/.pins"
  fi
fi
echo "generated clients without a warning: openapi-python-client (all $operations operations)$(command -v npx >/dev/null && echo ', openapi-typescript')"

if [ -n "${ENGAGED_BIN:-}" ]; then
  bin=$ENGAGED_BIN
elif [ -x target/debug/engaged ] && [ -z "$(find src openapi Cargo.toml Cargo.lock -newer target/debug/engaged -print -quit)" ]; then
  bin=$root/target/debug/engaged # CI ran the tests just before: the build is there
else
  cargo build --quiet --bin engaged
  bin=$root/target/debug/engaged
fi

work=$(mktemp -d)
server=
cleanup() {
  local status=$?
  if [ -n "$server" ]; then
    kill "$server" 2>/dev/null || true
    wait "$server" 2>/dev/null || true
  fi
  if [ "$status" -eq 0 ]; then
    rm -rf "$work" "$clients"
  else
    echo "openapi-check failed; server log and schemathesis state kept in $work, generated clients and recorded answers in $clients" >&2
    tail -n 20 "$work/serve.log" >&2 2>/dev/null || true
  fi
}
trap cleanup EXIT

data=$work/data
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
base="http://127.0.0.1:$port"
"$bin" --data-dir "$data" init 2>/dev/null
"$bin" --data-dir "$data" org create openapi-check >/dev/null
key=$("$bin" --data-dir "$data" key create --org openapi-check --scope admin --name openapi-check)
"$bin" --data-dir "$data" org create openapi-smoke >/dev/null
smoke_key=$("$bin" --data-dir "$data" key create --org openapi-smoke --scope admin --name openapi-smoke)
"$bin" --data-dir "$data" serve --insecure-http --listen "127.0.0.1:$port" --recording-link-ttl-secs $((budget + 600)) >"$work/serve.log" 2>&1 &
server=$!

# Waits for readiness, then seeds the records the document's examples name (leadId
# crm-10423, crm-10424 for the delete example, callId call-8f3a2c, phone +15550102030),
# a webhook endpoint on a closed loopback port, some events and messages, and a
# recording.
BASE=$base KEY=$key LINK=$work/link.json "$venv/bin/python" - <<'PY'
import json, os, sys, time, urllib.error, urllib.parse, urllib.request

base, key = os.environ["BASE"], os.environ["KEY"]

def call(method, path, body=None, keyed=True):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(base + path, data=data, method=method)
    req.add_header("content-type", "application/json")
    if keyed:
        req.add_header("x-api-key", key)
    with urllib.request.urlopen(req, timeout=10) as r:
        return r.status, json.loads(r.read() or b"null")

for _ in range(200):
    try:
        if call("GET", "/readyz", keyed=False)[0] == 200:
            break
    except (urllib.error.URLError, ConnectionError):
        time.sleep(0.05)
else:
    sys.exit("the server did not become ready")

call("POST", "/v1/webhooks", {"url": "http://127.0.0.1:9/sink"})
call("POST", "/v1/leads", {"id": "crm-10423", "firstName": "Grace", "lastName": "Hopper",
     "phone": "+15550102030", "email": "grace@example.com", "timeZone": "America/New_York",
     "customerProfile": "default", "tags": [{"id": "t1", "name": "VIP", "condition": "score > 90"}]})
call("POST", "/v1/leads", {"id": "crm-10424", "phone": "+15550102031"})
call("PUT", "/v1/calls/call-8f3a2c", {"leadId": "crm-10423", "direction": "OUTBOUND",
     "callStatus": "COMPLETE", "durationSeconds": 95, "dispositionId": "d1", "transferStatus": "connected",
     "transcript": [{"role": "agent", "text": "Hello"}]})
call("POST", "/v1/leads/crm-10423/messages", {"owner": "lead", "channel": "sms", "content": {"text": "Hi"}})
call("POST", "/v1/leads/crm-10423/messages", {"owner": "user", "channel": "email", "content": {"text": "Hello", "subject": "Demo"}})
call("POST", "/v1/leads/crm-10423/events", {"type": "TOOL_CALL", "id": "tool-1", "data": {"tool": "calendar"}})
call("POST", "/v1/dnc/register", {"phone": "+15550104444"})

# A recording of two chunks and its signed link, which the hooks below give the
# download operation.
call("PUT", "/v1/calls/call-rec-1", {"leadId": "crm-10423", "direction": "INBOUND", "callStatus": "COMPLETE"})
audio = urllib.request.Request(base + "/v1/calls/call-rec-1/recording", data=bytes(range(256)) * 1200, method="PUT")
audio.add_header("content-type", "audio/mpeg")
audio.add_header("x-api-key", key)
urllib.request.urlopen(audio, timeout=10).close()
link = urllib.parse.urlsplit(call("GET", "/v1/calls/call-rec-1/recording")[1]["url"])
org, call_id = [urllib.parse.unquote(s) for s in link.path.split("/")[3:5]]
query = dict(urllib.parse.parse_qsl(link.query))
with open(os.environ["LINK"], "w") as f:
    json.dump({"path": {"org": org, "callId": call_id}, "query": {"expires": int(query["expires"]), "sig": query["sig"]}}, f)
PY

# The smoke session through the generated Python client (its own organization), which
# records every JSON answer; then the TypeScript types must hold each of them.
mkdir "$clients/answers"
BASE=$base KEY=$smoke_key timeout 120 "$client_venv/bin/python" scripts/openapi-smoke.py \
  "$root/openapi/openapi.json" "$clients" "$clients/answers"
if [ -f "$clients/api.ts" ]; then
  "$client_venv/bin/python" - "$clients/answers" docs/api.md "$clients/check.ts" <<'PY'
import glob, json, os, re, sys
answers, readme, out = sys.argv[1:4]
lines = [
    'import type { operations } from "./api";',
    "type Answer<O extends keyof operations, S extends keyof operations[O][\"responses\"]> =",
    "  operations[O][\"responses\"][S] extends { content: { \"application/json\": infer T } } ? T : never;",
]
for path in sorted(glob.glob(os.path.join(answers, "*.json"))):
    a = json.load(open(path))
    name = os.path.basename(path)[:-5]
    lines.append(f'// {a["operationId"]} {a["status"]}')
    lines.append(f'export const answer{name}: Answer<"{a["operationId"]}", {a["status"]}> = '
                 f'{json.dumps(a["body"], ensure_ascii=False)};')
# docs/api.md's call with a transcript, as the request body of PUT /v1/calls.
bodies = re.findall(r"-d '(\{[^']*\"transcript\"[^']*\})'", open(readme).read())
if not bodies:
    sys.exit("the PUT /v1/calls example with a transcript was not found in docs/api.md")
for i, body in enumerate(bodies):
    lines.append(f'export const readmePutCall{i}: NonNullable<operations["putCall"]["requestBody"]>'
                 f'["content"]["application/json"] = {json.dumps(json.loads(body))};')
open(out, "w").write("\n".join(lines) + "\n")
PY
  (cd "$clients" && "$tsc_dir/node_modules/.bin/tsc" --strict --noEmit --target es2022 --module esnext \
    --moduleResolution bundler check.ts) || { echo "tsc --strict: recorded answers the TypeScript types do not hold (above)" >&2; exit 1; }
  echo "tsc --strict: the TypeScript types hold $(ls "$clients/answers" | wc -l) recorded answers and docs/api.md's PUT /v1/calls example"
fi

# Schemathesis hooks: keep generated URLs on loopback, give the download operation the
# seeded recording's link, and send generated audio bodies.
cat >"$work/hooks.py" <<'PY'
import json
import os
import re

import schemathesis

CLOSED_LOOPBACK_PORT = "http://127.0.0.1:9/sink"
with open(os.environ["OPENAPI_CHECK_LINK"]) as f:
    LINK = json.load(f)


@schemathesis.hook
def before_call(context, case, kwargs):
    # A webhook endpoint or compliance service URL the server would accept would make it
    # call out; point every such URL at a closed loopback port instead.
    if isinstance(case.body, dict):
        for field in ("url", "complianceUrl"):
            value = case.body.get(field)
            if isinstance(value, str) and re.match(r"(?i)\s*https?:", value):
                case.body[field] = CLOSED_LOOPBACK_PORT
        # The assistant's model server likewise; and a sandbox provider slowed down past
        # the client's timeout would only measure patience.
        assistant = case.body.get("assistant")
        if isinstance(assistant, dict) and isinstance(assistant.get("baseUrl"), str):
            assistant["baseUrl"] = CLOSED_LOOPBACK_PORT
        providers = case.body.get("providers")
        if isinstance(providers, dict):
            for provider in providers.values():
                if isinstance(provider, dict) and isinstance(provider.get("latencyMs"), int):
                    provider["latencyMs"] = min(provider["latencyMs"], 100)
    # Cases that carry every part of a link get the real one, so that downloads and
    # ranges are tested; the others test refusals.
    if case.operation.path == "/v1/recordings/{org}/{callId}":
        query = case.query or {}
        if "expires" in query and "sig" in query:
            case.path_parameters = dict(LINK["path"])
            case.query = {**query, **LINK["query"]}
    # Schemathesis reuses ids it saw in answers; keep the linked recording alive.
    if case.operation.method.upper() == "DELETE" and case.operation.path == "/v1/calls/{callId}/recording":
        if (case.path_parameters or {}).get("callId") == LINK["path"]["callId"]:
            case.path_parameters = {**case.path_parameters, "callId": "call-8f3a2c"}


schemathesis.serializer.alias(["audio/mpeg", "audio/wav", "audio/ogg"], "application/octet-stream")
PY

started=$SECONDS
status=0
(
  cd "$work"
  OPENAPI_CHECK_LINK=$work/link.json SCHEMATHESIS_HOOKS=$work/hooks.py timeout "$budget" "$venv/bin/schemathesis" \
    run "$root/openapi/openapi.json" \
    --url "$base" \
    --header "x-api-key: $key" \
    --checks not_a_server_error,status_code_conformance,content_type_conformance,response_headers_conformance,response_schema_conformance,ignored_auth \
    --max-examples "$examples" \
    "${seed[@]}" \
    --request-timeout 20 \
    --no-color
) || status=$?
echo "schemathesis ($mode pass) took $((SECONDS - started)) s"
if [ "$status" -eq 124 ]; then
  echo "schemathesis did not finish within $budget s" >&2
fi
exit "$status"
