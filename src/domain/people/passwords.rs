//! Passwords: generated, checked, hashed with argon2id (RustCrypto `argon2`) and
//! verified in constant time. Only the PHC hash string is stored.
//!
//! Parameters: argon2id, 64 MiB of memory, 3 passes, 1 lane (m=65536 KiB, t=3, p=1;
//! above OWASP's minimum of 19 MiB and 2 passes), chosen so that one check costs 50 to
//! 250 ms on this project's 2-core machine: measured by `cargo bench --bench console
//! -- argon2` (`docs/performance.md`). Hashing is slow on purpose: the server runs every
//! hash and check through one [`Work`] (off the async threads, never in a write job),
//! which bounds how many run at once and how many wait, so any number of parallel
//! sign-ins holds at most `permits` × 64 MiB.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use tokio::sync::Semaphore;

use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::{Algorithm, Argon2, Params, Version};

use crate::error::{Error, Result};

/// The fewest characters a password may have.
pub const MIN_CHARS: usize = 12;
/// The most characters a password may have.
pub const MAX_CHARS: usize = 200;
/// Characters of a generated password: no look-alikes (0/O, 1/l/I).
const ALPHABET: &[u8] = b"23456789abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ";
/// A generated password's length: 20 of 57 characters is about 117 bits.
const GENERATED_CHARS: usize = 20;

/// argon2id's memory, in KiB.
const MEMORY_KIB: u32 = 64 * 1024;
/// argon2id's passes over the memory.
const PASSES: u32 = 3;

fn argon2() -> Argon2<'static> {
    let params = Params::new(MEMORY_KIB, PASSES, 1, None).unwrap_or_default();
    Argon2::new(Algorithm::Argon2id, Version::V0x13, params)
}

/// A new random password.
pub fn generate() -> String {
    let bytes = crate::ids::random_bytes::<GENERATED_CHARS>();
    bytes
        .iter()
        .map(|b| ALPHABET[*b as usize % ALPHABET.len()] as char)
        .collect()
}

/// Whether `password` may be set: 12 to 200 characters.
pub fn check_new(password: &str) -> Result<()> {
    let chars = password.chars().count();
    if chars < MIN_CHARS {
        return Err(Error::BadRequest(format!(
            "Password too short: at least {MIN_CHARS} characters"
        )));
    }
    crate::domain::records::limits::text("password", password, MAX_CHARS)
}

/// The argon2id hash of `password` in PHC form (a fresh salt each time).
pub fn hash(password: &str) -> Result<String> {
    let salt = SaltString::encode_b64(&crate::ids::random_bytes::<16>())
        .map_err(|e| Error::Internal(format!("password salt: {e}")))?;
    argon2()
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|e| Error::Internal(format!("password hash: {e}")))
}

/// An argon2id hash with small costs (8 MiB, 1 pass), for the test kit's people only:
/// a test process starts many servers with many users, and 64 MiB per hash would swell
/// it. A check reads the costs from the hash itself, so such a user signs in through
/// the real path.
#[cfg(any(test, feature = "testkit"))]
pub fn hash_cheaply(password: &str) -> Result<String> {
    let salt = SaltString::encode_b64(&crate::ids::random_bytes::<16>())
        .map_err(|e| Error::Internal(format!("password salt: {e}")))?;
    let params = Params::new(8 * 1024, 1, 1, None)
        .map_err(|e| Error::Internal(format!("password params: {e}")))?;
    Argon2::new(Algorithm::Argon2id, Version::V0x13, params)
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|e| Error::Internal(format!("password hash: {e}")))
}

/// The bound on argon2 work in the server: `permits` hashes or checks run at once (each
/// holding its hash's memory), at most `queue` more wait for a permit, and anything
/// beyond is [`Busy`] at once rather than waiting.
#[derive(Debug)]
pub struct Work {
    permits: Arc<Semaphore>,
    /// Hashes running or waiting.
    entered: Arc<AtomicUsize>,
    /// `permits` + `queue`.
    capacity: usize,
}

/// Refused: every permit is taken and the queue is full.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Busy;

/// A place among the running or waiting hashes, given back when dropped.
struct Entered(Arc<AtomicUsize>);

impl Drop for Entered {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Work {
    /// `permits` at once (at least 1) and `queue` waiting.
    pub fn new(permits: usize, queue: usize) -> Work {
        let permits = permits.max(1);
        Work {
            permits: Arc::new(Semaphore::new(permits)),
            entered: Arc::default(),
            capacity: permits + queue,
        }
    }

    /// Sized to the machine: one permit per core (`available_parallelism`), and twice
    /// as many waiting, at least 8.
    pub fn for_machine() -> Work {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        Work::new(cores, (2 * cores).max(8))
    }

    /// Runs `job` on a blocking thread once a permit is free; [`Busy`] at once when the
    /// queue is full. The permit goes with the job, so a caller that stops waiting
    /// still leaves it taken until the hash is done.
    async fn run<T: Send + 'static>(
        &self,
        job: impl FnOnce() -> T + Send + 'static,
    ) -> Result<std::result::Result<T, Busy>> {
        let entered = Entered(self.entered.clone());
        if self.entered.fetch_add(1, Ordering::AcqRel) >= self.capacity {
            return Ok(Err(Busy));
        }
        let permit = self
            .permits
            .clone()
            .acquire_owned()
            .await
            .map_err(|e| Error::Internal(format!("password work: {e}")))?;
        tokio::task::spawn_blocking(move || {
            let _held = (permit, entered);
            job()
        })
        .await
        .map(Ok)
        .map_err(|e| Error::Internal(format!("password work: {e}")))
    }

    /// Whether `password` matches `hash`; `None` checks it against [`dummy_hash`], so
    /// an unknown email takes as long.
    pub async fn verify(
        &self,
        password: String,
        hash: Option<String>,
    ) -> Result<std::result::Result<bool, Busy>> {
        self.run(move || match hash {
            Some(hash) => verify(&password, &hash),
            None => verify(&password, dummy_hash()),
        })
        .await
    }

    /// The argon2id hash of `password`; 503 when the work is busy.
    pub async fn hash(&self, password: String) -> Result<String> {
        self.run(move || hash(&password))
            .await?
            .map_err(|Busy| Error::Unavailable)?
    }

    /// Takes every permit and every place in the queue until dropped, as a flood of
    /// sign-ins would: for tests of the busy answer.
    #[cfg(any(test, feature = "testkit"))]
    pub fn occupy(&self) -> Occupied {
        let mut permits = Vec::new();
        while let Ok(permit) = self.permits.clone().try_acquire_owned() {
            permits.push(permit);
        }
        let mut places = Vec::new();
        while self.entered.fetch_add(1, Ordering::AcqRel) < self.capacity {
            places.push(Entered(self.entered.clone()));
        }
        self.entered.fetch_sub(1, Ordering::AcqRel);
        Occupied {
            _permits: permits,
            _places: places,
        }
    }
}

/// Every permit and place of a [`Work`], held until dropped ([`Work::occupy`]).
#[cfg(any(test, feature = "testkit"))]
pub struct Occupied {
    _permits: Vec<tokio::sync::OwnedSemaphorePermit>,
    _places: Vec<Entered>,
}

/// Whether `password` matches `hash` (a PHC string, whose own costs the check uses); an
/// unreadable hash matches nothing.
pub fn verify(password: &str, hash: &str) -> bool {
    match PasswordHash::new(hash) {
        Ok(parsed) => argon2()
            .verify_password(password.as_bytes(), &parsed)
            .is_ok(),
        Err(_) => false,
    }
}

/// A hash no password is known for: an unknown email is checked against it, so a
/// sign-in takes as long whether or not the email exists.
pub fn dummy_hash() -> &'static str {
    static DUMMY: OnceLock<String> = OnceLock::new();
    DUMMY.get_or_init(|| hash(&generate()).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cheap_hash_verifies_through_the_same_check() {
        let h = hash_cheaply("correct horse battery").unwrap();
        assert!(h.starts_with("$argon2id$v=19$m=8192,t=1,p=1$"));
        assert!(verify("correct horse battery", &h));
        assert!(!verify("wrong horse battery", &h));
    }

    #[test]
    fn a_hash_verifies_its_password_only() {
        let h = hash("correct horse battery").unwrap();
        assert!(h.starts_with("$argon2id$v=19$m=65536,t=3,p=1$"));
        assert!(verify("correct horse battery", &h));
        assert!(!verify("correct horse batterY", &h));
        assert!(!verify("anything", "not a hash"));
        assert_ne!(
            h,
            hash("correct horse battery").unwrap(),
            "a fresh salt each time"
        );
    }

    #[tokio::test]
    async fn work_beyond_its_permits_and_queue_is_busy_at_once() {
        let work = Work::new(1, 1);
        let held = work.occupy();
        assert_eq!(
            work.verify("x".into(), Some("h".into())).await.unwrap(),
            Err(Busy)
        );
        assert!(matches!(
            work.hash("correct horse battery".into()).await,
            Err(Error::Unavailable)
        ));
        drop(held);
        let h = hash_cheaply("correct horse battery").unwrap();
        assert_eq!(
            work.verify("correct horse battery".into(), Some(h))
                .await
                .unwrap(),
            Ok(true)
        );
        assert_eq!(work.entered.load(Ordering::Acquire), 0);
    }

    #[test]
    fn generated_passwords_are_long_enough_and_differ() {
        let (a, b) = (generate(), generate());
        assert_eq!(a.chars().count(), GENERATED_CHARS);
        assert!(check_new(&a).is_ok());
        assert_ne!(a, b);
        assert!(check_new("short").is_err());
    }
}
