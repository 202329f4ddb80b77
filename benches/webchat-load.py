"""Issue 46's web chat targets against the real server as its own process (loopback
only, bounded in time).

1. Seeds LEADS leads through the library (benches/seed.rs), serves them
   (`engaged serve`, its own process) and turns web chat on (`PATCH /v1/org`).
2. Memory: the server's VmRSS at idle, then with SESSIONS visitor sessions each holding
   its event stream open on its own TLS connection (sessions are made over HTTP from
   127.0.0.2 ... 127.0.0.254, five an address, the per-address bound in a minute).
   Target: at most 64 MiB above idle a 1,000 streams.
3. Inbox latency: a console person signs in and holds `/console/events`; while
   benches/post.lua puts the POST load on (CONNECTIONS connections, DURATION), a visitor
   message is posted every 200 ms (rotating over sessions, each under its 20 a minute)
   and timed from before its request to the console's `change` event naming its
   session in `webchats`. The visitors' streams stay open meanwhile.
   Target: p99 at most 1 s.

    python3 benches/webchat-load.py
    SESSIONS=1000 LEADS=10000 DURATION=30s python3 benches/webchat-load.py

Environment: LEADS (10000), SESSIONS (1000), CONNECTIONS (64), DURATION (30 s),
SEED_BUDGET (600 s). Builds `engaged` and the seeder with `cargo build --release`.
Needs wrk. Python 3 stdlib only.
"""
import asyncio, json, os, shutil, signal, subprocess, sys, tempfile, time, urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from replica_kit import build, free_port, pct, rss_kib, tls, wait_https

LEADS = int(os.environ.get("LEADS", "10000"))
SESSIONS = int(os.environ.get("SESSIONS", "1000"))
CONNECTIONS = int(os.environ.get("CONNECTIONS", "64"))
DURATION = os.environ.get("DURATION", "30s")
SITE = "https://shop.example"
# 127.0.0.2 ... 127.0.0.254: Linux routes all of 127/8 to lo.
ADDRESSES = [f"127.0.0.{i}" for i in range(2, 255)]
PER_ADDRESS = 5
MAX_SESSIONS_PER_HOUR = 100_000  # the setting's bound (src/domain/settings/webchat.rs)
STEP = 10.0  # the timeout of one request or step


class Conn:
    """One HTTP/1.1 connection over TLS (asyncio), keep-alive, bound to a source address."""

    def __init__(self, port, source="127.0.0.1"):
        self.port, self.source, self.reader, self.writer = port, source, None, None

    async def open(self):
        self.reader, self.writer = await asyncio.wait_for(asyncio.open_connection(
            "127.0.0.1", self.port, ssl=tls(), server_hostname="localhost",
            local_addr=(self.source, 0)), STEP)
        return self

    def close(self):
        if self.writer:
            self.writer.close()

    async def send(self, method, path, headers=None, body=b""):
        head = [f"{method} {path} HTTP/1.1", f"host: 127.0.0.1:{self.port}"]
        head += [f"{k}: {v}" for k, v in (headers or {}).items()]
        if body or method in ("POST", "PATCH"):
            head.append(f"content-length: {len(body)}")
        self.writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + body)
        await self.writer.drain()

    async def head(self):
        """The status and headers (lower-case names; `set-cookie` may repeat)."""
        raw = await asyncio.wait_for(self.reader.readuntil(b"\r\n\r\n"), STEP)
        lines = raw.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        headers = []
        for line in lines[1:]:
            if ":" in line:
                k, v = line.split(":", 1)
                headers.append((k.strip().lower(), v.strip()))
        return status, headers

    async def chunk(self):
        """One chunk of a chunked body (b"" at its end)."""
        size = int((await self.reader.readline()).split(b";")[0].strip() or b"0", 16)
        data = await self.reader.readexactly(size + 2)
        return data[:-2]

    async def request(self, method, path, headers=None, body=b""):
        """Status, headers and the whole body."""
        await self.send(method, path, headers, body)
        status, hs = await self.head()
        h = dict(hs)
        if h.get("transfer-encoding", "").lower() == "chunked":
            out = b""
            while True:
                c = await asyncio.wait_for(self.chunk(), STEP)
                if not c:
                    break
                out += c
        else:
            out = await asyncio.wait_for(self.reader.readexactly(int(h.get("content-length", "0"))), STEP)
        return status, hs, out


async def json_request(port, method, path, headers, doc=None, source="127.0.0.1"):
    c = await Conn(port, source).open()
    try:
        body = json.dumps(doc).encode() if doc is not None else b""
        hs = dict(headers, **({"content-type": "application/json"} if doc is not None else {}))
        status, _, out = await c.request(method, path, hs, body)
        return status, (json.loads(out) if out else None)
    finally:
        c.close()


async def gather_bounded(jobs, width):
    sem = asyncio.Semaphore(width)

    async def one(job):
        async with sem:
            return await job
    return await asyncio.gather(*(one(j) for j in jobs))


async def create_sessions(port, org, n):
    async def one(i):
        status, doc = await json_request(port, "POST", f"/webchat/{org}/sessions",
                                         {"origin": SITE}, {}, ADDRESSES[i // PER_ADDRESS])
        if status != 201:
            raise SystemExit(f"session {i}: {status} {doc}")
        return doc["sessionId"], doc["token"]
    if n > len(ADDRESSES) * PER_ADDRESS:
        raise SystemExit(f"at most {len(ADDRESSES) * PER_ADDRESS} sessions a minute")
    return await gather_bounded([one(i) for i in range(n)], 32)


async def open_stream(port, org, sid, token, i):
    """A visitor's event stream on its own connection, once its first bytes arrived."""
    c = await Conn(port, ADDRESSES[i % len(ADDRESSES)]).open()
    await c.send("GET", f"/webchat/{org}/sessions/{sid}/events?token={token}",
                 {"origin": SITE, "accept": "text/event-stream"})
    status, _ = await c.head()
    first = await asyncio.wait_for(c.chunk(), STEP)
    if status != 200 or not first:
        raise SystemExit(f"stream {i}: {status}")
    return c


async def drain(c):
    """Reads a held stream (heartbeats, lines) so its socket never backs up."""
    try:
        while await c.reader.read(65536):
            pass
    except (OSError, asyncio.CancelledError):
        pass


async def sign_in(port, email, password):
    c = await Conn(port).open()
    try:
        status, _, _ = await c.request("GET", "/console/login")
        form = urllib.parse.urlencode({"email": email, "password": password}).encode()
        status, hs, _ = await c.request("POST", "/console/login", {
            "origin": f"https://127.0.0.1:{port}",
            "content-type": "application/x-www-form-urlencoded"}, form)
        cookie = next((v.split(";")[0] for k, v in hs if k == "set-cookie"), None)
        if status != 303 or not cookie:
            raise SystemExit(f"sign-in: {status}")
        return cookie
    finally:
        c.close()


async def console_events(port, cookie, seen, ends):
    """Holds `/console/events`; calls `seen(ids, at)` for each `change` naming web chats.
    A stream the server ends (`reload` when it fell behind) is reopened, counted in
    `ends`."""
    last = None
    while True:
        c = await Conn(port).open()
        headers = {"cookie": cookie, "accept": "text/event-stream"}
        if last:
            headers["last-event-id"] = last
        await c.send("GET", "/console/events", headers)
        status, _ = await c.head()
        if status != 200:
            raise SystemExit(f"console events: {status}")
        buf = ""
        try:
            while True:
                data = await c.chunk()
                if not data:
                    break
                buf += data.decode()
                while "\n\n" in buf:
                    event, buf = buf.split("\n\n", 1)
                    fields = dict(l.split(": ", 1) for l in event.split("\n") if ": " in l)
                    last = fields.get("id", last)
                    if fields.get("event") == "change":
                        ids = json.loads(fields.get("data", "{}")).get("webchats", [])
                        if ids:
                            seen(ids, time.monotonic())
        except (OSError, asyncio.IncompleteReadError, ValueError):
            pass
        finally:
            c.close()
        ends.append(time.monotonic())


async def measure(port, org, admin, key, cookie, engaged_pid):
    status, doc = await json_request(port, "PATCH", "/v1/org", {"x-api-key": admin}, {"webchat": {
        "enabled": True, "allowedOrigins": [SITE], "greeting": "Hi",
        "maxSessionsPerHour": MAX_SESSIONS_PER_HOUR}})
    if status != 200:
        raise SystemExit(f"PATCH /v1/org: {status} {doc}")

    # Memory.
    started = time.monotonic()
    sessions = await create_sessions(port, org, SESSIONS)
    print(f"{SESSIONS} sessions made in {time.monotonic() - started:.1f} s", flush=True)
    await asyncio.sleep(3)
    idle = rss_kib(engaged_pid)
    started = time.monotonic()
    streams = await gather_bounded(
        [open_stream(port, org, sid, tok, i) for i, (sid, tok) in enumerate(sessions)], 64)
    drains = [asyncio.create_task(drain(c)) for c in streams]
    print(f"{len(streams)} streams open (first bytes on each) in {time.monotonic() - started:.1f} s",
          flush=True)
    await asyncio.sleep(5)
    held = rss_kib(engaged_pid)
    per = (held - idle) / 1024 * 1000 / len(streams)
    print(f"server RSS: {idle / 1024:.1f} MiB idle, {held / 1024:.1f} MiB with {len(streams)} streams: "
          f"{(held - idle) / 1024:.1f} MiB above idle, {per:.1f} MiB a 1,000 streams "
          f"({(held - idle) / len(streams):.1f} KiB a stream; target: at most 64 MiB)", flush=True)

    # Inbox latency under the POST load.
    pending, latencies, ends = {}, [], []

    def seen(ids, at):
        for sid in ids:
            if sid in pending:
                latencies.append(at - pending.pop(sid))
    console = asyncio.create_task(console_events(port, cookie, seen, ends))
    await asyncio.sleep(1)
    wrk = await asyncio.create_subprocess_exec(
        "wrk", "-t2", f"-c{CONNECTIONS}", f"-d{DURATION}", "--latency", "-s",
        os.path.join(HERE, "post.lua"), "-H", f"x-api-key: {key}", f"https://127.0.0.1:{port}/",
        env=dict(os.environ, LEADS=str(LEADS), RUN="webchat", TARGET="engaged"),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL)
    poster = await Conn(port).open()
    sent, refused, n = 0, 0, 0
    rotation = sessions[:60]  # 5 a second over 60: each one 5 a minute, under its 20
    try:
        finished = asyncio.create_task(wrk.communicate())
        await asyncio.sleep(1)
        while not finished.done():
            sid, token = rotation[n % len(rotation)]
            n += 1
            if sid not in pending:
                pending[sid] = time.monotonic()
                status, _, _ = await poster.request(
                    "POST", f"/webchat/{org}/sessions/{sid}/messages",
                    {"origin": SITE, "authorization": f"Bearer {token}", "content-type": "application/json"},
                    json.dumps({"text": f"message {n}"}).encode())
                if status == 202:
                    sent += 1
                else:
                    pending.pop(sid, None); refused += 1
            await asyncio.sleep(0.2)
        out = (await asyncio.wait_for(finished, 60))[0].decode()
        await asyncio.sleep(STEP if pending else 0)  # the last ones' changes
    finally:
        poster.close()
        if wrk.returncode is None:
            wrk.kill()
        console.cancel()
        for t in drains:
            t.cancel()
        for c in streams:
            c.close()
    requests = next((l for l in out.splitlines() if l.startswith("Requests/sec")), "?:?")
    print(f"POST load: {CONNECTIONS} connections, {DURATION}: {requests.split(':')[-1].strip()} req/s "
          f"(with {len(streams)} visitor streams held)", flush=True)
    print(f"visitor message to the console's inbox stream: p50 {pct(latencies, .5) * 1000:.0f} ms, "
          f"p99 {pct(latencies, .99) * 1000:.0f} ms, max {max(latencies, default=0) * 1000:.0f} ms; "
          f"{len(latencies)} of {sent} messages seen ({len(pending)} not within {STEP:.0f} s, "
          f"{refused} refused; the console stream ended {len(ends)} times) "
          f"(target: p99 at most 1 s)", flush=True)


def main():
    engaged, seed = build(os.path.dirname(HERE))
    os.chdir(tempfile.mkdtemp(prefix="webchat-load-"))
    server = None
    try:
        run = lambda *a, **k: subprocess.run([engaged, "--data-dir", "d", *a], check=True,
                                             capture_output=True, text=True, timeout=60,
                                             **k).stdout.strip()
        run("init")
        org = run("org", "create", "load").splitlines()[0]
        key = run("key", "create", "--org", "load", "--scope", "write")
        admin = run("key", "create", "--org", "load", "--scope", "admin")
        email = "agent@load.example"
        password = run("user", "create", "--org", "load", "--email", email, "--name", "Ana Ruiz")
        started = time.monotonic()
        subprocess.run([seed], check=True, timeout=3600, env=dict(
            os.environ, ENGAGED_SEED_DB="d/engaged.redb", ENGAGED_SEED_KEY=key,
            ENGAGED_SEED_LEADS=str(LEADS), ENGAGED_SEED_CALLS=str(min(1000, LEADS)),
            ENGAGED_SEED_EVENTS="0", ENGAGED_SEED_BUDGET_SECS=os.environ.get("SEED_BUDGET", "600")))
        print(f"seeded {LEADS} leads in {time.monotonic() - started:.0f} s", flush=True)

        port = free_port()
        server = subprocess.Popen(
            [engaged, "--data-dir", "d", "serve", "--listen", f"127.0.0.1:{port}",
             "--max-connections", str(SESSIONS + CONNECTIONS + 256)],
            stderr=open("server.log", "w"))
        if not wait_https(port, seconds=120):
            raise SystemExit("the server did not start; see server.log")
        cookie = asyncio.run(sign_in(port, email, password))
        asyncio.run(asyncio.wait_for(measure(port, org, admin, key, cookie, server.pid), 900))
        if os.path.exists(f"/proc/{server.pid}/smaps_rollup"):
            rollup = open(f"/proc/{server.pid}/smaps_rollup").read().splitlines()
            print("server smaps_rollup: " + ", ".join(
                " ".join(l.split()[:2]) + " kB" for l in rollup if l.split()[0] in ("Rss:", "Anonymous:")))
    finally:
        if server and server.poll() is None:
            server.send_signal(signal.SIGTERM)
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill(); server.wait()
        shutil.rmtree("d", ignore_errors=True)
        print(f"logs kept in {os.getcwd()}")


if __name__ == "__main__":
    main()
