#!/usr/bin/env python3
"""Hostile load against a release `engaged serve`, loopback only, bounded in time.

Run through `bash benches/hostile.sh` (which builds the binary). Each attack runs while
probes measure what an innocent client sees; the server is a separate process, so its
resident memory (VmRSS, sampled every 50 ms) is its own. Figures are from one run, as
ratios to the idle figures of the same run: the machine is shared and noisy.

1. 100 parallel sign-ins (`POST /console/login`, unknown emails): server RSS above idle
   (target +300 MiB at most) and `/healthz` p99 on fresh connections (target 50 ms).
2. 1,024 slow-body connections from 5 addresses (a complete head, then a byte every
   2 s, reconnecting when closed): `/healthz` p99 on fresh connections from another
   address, and probes that got no answer (target p99 50 ms, none unanswered).
3. Organization A imports ROWS rows (each enrolled in a campaign) while organization B
   posts single events one after another: B's p99 against its idle p99 (target at most
   3x); then another ROWS rows alone, for the import's own speed (it takes short parts
   only while other writes come).
4. Organization A pauses and resumes that campaign (every enrolled lead changes, in the
   writer's bulk lane) while B posts events: the same measure (target at most 3x, or
   50 ms).
5. A calendar of organization A whose CalDAV collection (served here on loopback, as a
   simple store that returns what it holds unexpanded) holds an event repeating every
   second since 1900: its open times asked again and again (each under a new username,
   so none is answered from the cache) while `/healthz` is probed: `/healthz` p99
   (target 50 ms) and how long each read of the times took.
"""

import asyncio
import json
import multiprocessing
import os
import random
import ssl
import statistics
import sys
import threading
import time

HOST = "127.0.0.1"


def settings():
    return {
        "port": int(os.environ["PORT"]),
        "cafile": os.environ["CAFILE"],
        "pid": int(os.environ["SERVER_PID"]),
        "key_a": os.environ["KEY_A"],
        "key_b": os.environ["KEY_B"],
        "rows": int(os.environ.get("ROWS", "100000")),
        "seconds": float(os.environ.get("SECONDS_PER_ATTACK", "20")),
        "slow": int(os.environ.get("SLOW_CONNECTIONS", "1024")),
        "attacks": os.environ.get("ATTACKS", "12345"),
    }


S = settings()
CTX = ssl.create_default_context(cafile=S["cafile"])


def rss_mib():
    with open(f"/proc/{S['pid']}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


class Peak:
    """Samples the server's RSS every 50 ms until stopped."""

    def __init__(self):
        self.peak = rss_mib()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.stop.wait(0.05):
            self.peak = max(self.peak, rss_mib())

    def end(self):
        self.stop.set()
        self.thread.join()
        return self.peak


def pct(samples, p):
    if not samples:
        return float("nan")
    s = sorted(samples)
    return s[min(len(s) - 1, int(len(s) * p))]


async def request(method, path, headers=None, body=b"", local=None, timeout=30.0, conn=None):
    """One HTTP/1.1 request; returns (status, body, seconds). A fresh connection unless
    `conn` (a (reader, writer) pair kept alive) is given."""
    started = time.perf_counter()
    own = conn is None
    if own:
        conn = await asyncio.wait_for(
            asyncio.open_connection(HOST, S["port"], ssl=CTX, server_hostname="localhost",
                                    local_addr=(local, 0) if local else None),
            timeout)
    reader, writer = conn
    head = f"{method} {path} HTTP/1.1\r\nhost: localhost\r\ncontent-length: {len(body)}\r\n"
    for name, value in (headers or {}).items():
        head += f"{name}: {value}\r\n"
    if own:
        head += "connection: close\r\n"
    writer.write(head.encode() + b"\r\n" + body)
    await writer.drain()
    status_line = await asyncio.wait_for(reader.readline(), timeout)
    length = 0
    while True:
        line = await asyncio.wait_for(reader.readline(), timeout)
        if line in (b"\r\n", b""):
            break
        name, _, value = line.decode().partition(":")
        if name.lower() == "content-length":
            length = int(value)
    data = await asyncio.wait_for(reader.readexactly(length), timeout) if length else b""
    if own:
        writer.close()
    return int(status_line.split()[1]), data, time.perf_counter() - started


async def probe_healthz(seconds, local="127.0.0.10"):
    """Fresh connections to /healthz, 20 a second: latencies and unanswered probes."""
    latencies, unanswered = [], 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            status, _, took = await request("GET", "/healthz", local=local, timeout=10)
            latencies.append(took)
        except Exception:
            unanswered += 1
        await asyncio.sleep(0.05)
    return latencies, unanswered


async def probe_writes(seconds, lead):
    """Organization B's single-event writes, one after another on one connection."""
    conn = await asyncio.open_connection(HOST, S["port"], ssl=CTX, server_hostname="localhost")
    headers = {"x-api-key": S["key_b"], "content-type": "application/json"}
    latencies = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        body = json.dumps({"type": "NOTE", "data": {"n": len(latencies)}}).encode()
        status, data, took = await request("POST", f"/v1/leads/{lead}/events", headers, body,
                                           conn=conn)
        if status not in (200, 201):
            raise SystemExit(f"event write answered {status}: {data[:200]!r}")
        latencies.append(took)
        await asyncio.sleep(0.01)
    conn[1].close()
    return latencies


def ms(x):
    return f"{x * 1000:.1f} ms"


async def sign_ins(seconds):
    body = lambda: f"email=nobody{random.randrange(10**9)}%40x.example&password=wrong-password-123".encode()
    headers = {"content-type": "application/x-www-form-urlencoded", "sec-fetch-site": "same-origin"}
    counts = {}
    end = time.monotonic() + seconds

    async def one(i):
        while time.monotonic() < end:
            try:
                status, _, _ = await request("POST", "/console/login", headers, body(),
                                             local=f"127.0.1.{i % 200 + 1}", timeout=30)
            except Exception:
                status = "error"
            counts[status] = counts.get(status, 0) + 1

    await asyncio.gather(*(one(i) for i in range(100)))
    return counts


async def slow_bodies(seconds, n):
    end = time.monotonic() + seconds
    opened = {"opened": 0, "ended by the server": 0}

    async def one(i):
        local = f"127.0.2.{i % 5 + 1}"
        while time.monotonic() < end:
            try:
                reader, writer = await asyncio.wait_for(asyncio.open_connection(
                    HOST, S["port"], ssl=CTX, server_hostname="localhost", local_addr=(local, 0)), 10)
            except Exception:
                await asyncio.sleep(0.5)
                continue
            opened["opened"] += 1
            head = ("POST /v1/leads HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\n"
                    f"x-api-key: {S['key_b']}\r\ncontent-length: 100000\r\n\r\n")
            try:
                writer.write(head.encode())
                while time.monotonic() < end:
                    writer.write(b" ")
                    await writer.drain()
                    if reader.at_eof():
                        break
                    try:
                        if await asyncio.wait_for(reader.read(1), 2.0):
                            break  # an answer: the server ended this body
                    except asyncio.TimeoutError:
                        pass
                opened["ended by the server"] += 1
            except Exception:
                opened["ended by the server"] += 1
            finally:
                writer.close()

    await asyncio.gather(*(one(i) for i in range(n)))
    return opened


async def import_rows(rows, area="512"):
    lines = ["First Name,Phone Number,Email,profile"]
    for i in range(rows):
        lines.append(f"First{i},+1{area}{5000000 + i:07d},lead{area}x{i}@a.example,solar")
    body = ("\n".join(lines) + "\n").encode()
    started = time.perf_counter()
    status, data, _ = await request("POST", "/v1/leads/import",
                                    {"x-api-key": S["key_a"], "content-type": "text/csv"}, body,
                                    timeout=3600)
    took = time.perf_counter() - started
    report = json.loads(data) if data else {}
    return status, took, {k: report.get(k) for k in ("created", "updated", "merged")}


FLOOD = ("BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//bench//bench//EN\r\n"
         "BEGIN:VEVENT\r\nUID:flood@bench\r\nDTSTAMP:20250101T000000Z\r\nSUMMARY:Every second\r\n"
         "DTSTART:19000101T000000Z\r\nDURATION:PT1S\r\nRRULE:FREQ=SECONDLY\r\nEND:VEVENT\r\n"
         "END:VCALENDAR\r\n")


def flood_collection():
    """A CalDAV collection on loopback answering every REPORT with FLOOD, unexpanded and
    unfiltered, and PROPFIND with a calendar; its URL."""
    import http.server
    from xml.sax.saxutils import escape

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *_):
            pass

        def answer(self, body):
            self.rfile.read(int(self.headers.get("content-length") or 0))
            data = body.encode()
            self.send_response(207)
            self.send_header("content-type", "application/xml; charset=utf-8")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_PROPFIND(self):
            self.answer('<?xml version="1.0"?><D:multistatus xmlns:D="DAV:" xmlns:C="urn:ietf:params:xml:ns:caldav">'
                        '<D:response><D:href>/cal/</D:href><D:propstat><D:prop><D:resourcetype><D:collection/>'
                        '<C:calendar/></D:resourcetype></D:prop><D:status>HTTP/1.1 200 OK</D:status>'
                        '</D:propstat></D:response></D:multistatus>')

        def do_REPORT(self):
            self.answer('<?xml version="1.0"?><D:multistatus xmlns:D="DAV:" xmlns:C="urn:ietf:params:xml:ns:caldav">'
                        '<D:response><D:href>/cal/flood.ics</D:href><D:propstat><D:prop><D:getetag>"1"</D:getetag>'
                        f'<C:calendar-data>{escape(FLOOD)}</C:calendar-data></D:prop>'
                        '<D:status>HTTP/1.1 200 OK</D:status></D:propstat></D:response></D:multistatus>')

    server = http.server.ThreadingHTTPServer((HOST, 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://{HOST}:{server.server_address[1]}/cal/"


async def calendar_reads(seconds, url):
    """Asks the flood calendar's open times again and again, each after a change of
    username (a new cache key): the statuses and how long each took."""
    day = [["00:00", "24:00"]]
    took, statuses = [], {}
    end = time.monotonic() + seconds
    i = 0
    while time.monotonic() < end:
        i += 1
        calendar = {"timeZone": "UTC", "hours": {d: day for d in ("mon", "tue", "wed", "thu", "fri", "sat", "sun")},
                    "meetingMinutes": 30, "daysAhead": 14,
                    "caldav": {"url": url, "username": f"ana{i}", "password": "pw"}}
        headers = {"x-api-key": S["key_a"], "content-type": "application/json"}
        await request("PUT", "/v1/calendars/flood", headers, json.dumps(calendar).encode())
        status, _, t = await request("GET", "/v1/calendars/flood/times", {"x-api-key": S["key_a"]}, timeout=60)
        statuses[status] = statuses.get(status, 0) + 1
        took.append(t)
    return statuses, took


ATTACKS = {"sign_ins": sign_ins, "slow_bodies": slow_bodies, "calendar_reads": calendar_reads}


async def console_session():
    """Signs in as the bench's admin of organization A: the cookie and a CSRF token."""
    form = f"email=ops%40a.example&password={os.environ['ADMIN_PASSWORD']}".encode()
    reader, writer = await asyncio.open_connection(HOST, S["port"], ssl=CTX, server_hostname="localhost")
    writer.write(b"POST /console/login HTTP/1.1\r\nhost: localhost\r\nsec-fetch-site: same-origin\r\n"
                 b"content-type: application/x-www-form-urlencoded\r\nconnection: close\r\n"
                 + f"content-length: {len(form)}\r\n\r\n".encode() + form)
    await writer.drain()
    answer = (await reader.read()).decode(errors="replace")
    writer.close()
    cookie = next(line.split(":", 1)[1].split(";")[0].strip() for line in answer.split("\r\n")
                  if line.lower().startswith("set-cookie:"))
    _, page, _ = await request("GET", "/console/campaigns/solar", {"cookie": cookie})
    page = page.decode()
    at = page.index('name="csrf"')
    csrf = page[page.index('value="', at) + 7:]
    return cookie, csrf[:csrf.index('"')]


async def pause_resume():
    cookie, csrf = await console_session()
    took = []
    for what in ("pause", "resume"):
        started = time.perf_counter()
        status, _, _ = await request("POST", f"/console/campaigns/solar/{what}",
                                     {"cookie": cookie, "sec-fetch-site": "same-origin",
                                      "content-type": "application/x-www-form-urlencoded"},
                                     f"csrf={csrf}".encode(), timeout=3600)
        took.append((what, status, time.perf_counter() - started))
    return took


def run_attack(name, args, results):
    """The attack `name` in a process of its own, so that its thousand clients never
    delay the probe's event loop: what the probe measures is the server."""
    results.put(asyncio.run(ATTACKS[name](*args)))


async def with_probe(name, args, probe):
    """Runs attack `name` in another process with `probe` beside it; both results."""
    results = multiprocessing.Queue()
    process = multiprocessing.Process(target=run_attack, args=(name, args, results))
    process.start()
    await asyncio.sleep(0.5)
    measured = await probe
    outcome = await asyncio.get_running_loop().run_in_executor(None, results.get)
    process.join()
    return outcome, measured


async def main():
    seconds = S["seconds"]
    idle_rss = rss_mib()
    print(f"server idle RSS: {idle_rss:.0f} MiB")
    idle_health, _ = await probe_healthz(5)
    print(f"idle /healthz (fresh connections): p50 {ms(pct(idle_health, .5))}, p99 {ms(pct(idle_health, .99))}")
    status, _, _ = await request("POST", "/v1/leads", {"x-api-key": S["key_b"], "content-type": "application/json"},
                                 json.dumps({"id": "b1", "firstName": "Bea", "email": "bea@b.example"}).encode())
    assert status in (200, 201), status
    idle_writes = await probe_writes(5, "b1")
    idle_p99 = pct(idle_writes, .99)
    print(f"idle org B event write: p50 {ms(pct(idle_writes, .5))}, p99 {ms(idle_p99)} ({len(idle_writes)} writes)")

    if "1" in S["attacks"]:
        await attack_sign_ins(seconds, idle_rss)
    if "2" in S["attacks"]:
        await attack_slow_bodies(seconds, idle_rss)
    if "3" in S["attacks"]:
        await attack_import(idle_p99)
    if "4" in S["attacks"]:
        await attack_pause(idle_p99)
    if "5" in S["attacks"]:
        await attack_calendar(seconds)


async def attack_sign_ins(seconds, idle_rss):
    print("\n1. 100 parallel sign-ins")
    before = rss_mib()
    peak = Peak()
    counts, (health, unanswered) = await with_probe("sign_ins", (seconds,), probe_healthz(seconds - 1))
    top = peak.end()
    print(f"   answers: {counts}")
    print(f"   server RSS peak {top:.0f} MiB: +{top - idle_rss:.0f} MiB above idle, +{top - before:.0f} above "
          f"the attack's start (target +300)")
    print(f"   /healthz p50 {ms(pct(health, .5))}, p99 {ms(pct(health, .99))} (target 50 ms), unanswered {unanswered}")


async def attack_slow_bodies(seconds, idle_rss):
    print(f"\n2. {S['slow']} slow-body connections from 5 addresses")
    before = rss_mib()
    peak = Peak()
    opened, (health, unanswered) = await with_probe("slow_bodies", (seconds, S["slow"]), probe_healthz(seconds - 1))
    top = peak.end()
    print(f"   slow connections: {opened}")
    print(f"   server RSS peak {top:.0f} MiB: +{top - idle_rss:.0f} MiB above idle, +{top - before:.0f} above "
          f"the attack's start")
    print(f"   /healthz p50 {ms(pct(health, .5))}, p99 {ms(pct(health, .99))} (target 50 ms), unanswered {unanswered}")


async def attack_import(idle_p99):
    print(f"\n3. org A imports {S['rows']} rows (each enrolled) while org B writes events")
    task = asyncio.ensure_future(import_rows(S["rows"]))
    await asyncio.sleep(0.5)
    during = []
    while not task.done():
        during += await probe_writes(2, "b1")
    status, took, report = await task
    p99 = pct(during, .99)
    print(f"   import: {status} in {took:.1f} s, {report}")
    print(f"   org B event write: p50 {ms(pct(during, .5))}, p99 {ms(p99)} ({len(during)} writes); "
          f"{p99 / idle_p99:.2f}x idle p99 (target at most 3x)")
    status, alone, report = await import_rows(S["rows"], area="737")
    print(f"   the same import alone: {status} in {alone:.1f} s, {report}; "
          f"beside org B's writes it took {took / alone:.2f}x as long")


async def attack_pause(idle_p99):
    print(f"\n4. org A pauses and resumes its campaign while org B writes events")
    task = asyncio.ensure_future(pause_resume())
    during = []
    while not task.done():
        during += await probe_writes(1, "b1")
    took = await task
    p99 = pct(during, .99)
    print(f"   {', '.join(f'{what}: {status} in {t:.1f} s' for what, status, t in took)}")
    print(f"   org B event write: p50 {ms(pct(during, .5))}, p99 {ms(p99)} ({len(during)} writes); "
          f"{p99 / idle_p99:.2f}x idle p99 (target at most 3x, or 50 ms)")


async def attack_calendar(seconds):
    print("\n5. a calendar holding an event that repeats every second since 1900, read again and again")
    url = flood_collection()
    (statuses, took), (health, unanswered) = await with_probe(
        "calendar_reads", (seconds, url), probe_healthz(seconds - 1))
    print(f"   times answered {statuses}; each read p50 {ms(pct(took, .5))}, max {ms(max(took))}")
    print(f"   /healthz p50 {ms(pct(health, .5))}, p99 {ms(pct(health, .99))} (target 50 ms), unanswered {unanswered}")


if __name__ == "__main__":
    asyncio.run(main())
