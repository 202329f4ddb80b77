//! The server: listeners, TLS, HTTP/1.1 and HTTP/2 connections, and an orderly stop.
//!
//! [`Server::start`] opens the store, binds the TCP listener and the admin socket, and
//! spawns the accept loop; tests use it directly on an ephemeral port. [`serve`] is
//! `engaged serve`: start, wait for SIGTERM or SIGINT, stop. Stopping closes the
//! listener, lets connections finish their requests for a while, then drains the
//! writer, so every acknowledged write is on disk when the process exits.

mod admin_socket;
mod first_bytes;
pub mod limits;
mod plaintext;
mod startup;
pub mod tls;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::{TcpListener, TcpStream};

use first_bytes::FirstBytes;
use limits::{PerAddress, Unheaded, UnheadedSlot};
use tokio::sync::{watch, Semaphore, TryAcquireError};
use tokio::task::JoinHandle;
use tokio_rustls::TlsAcceptor;

use crate::api::{self, AppState};
use crate::config::{Config, Limits};
use crate::store::{OpenError, Store};

/// How long a TLS handshake or a request's headers may take.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long in-flight requests get to finish on shutdown.
const DRAIN_DEADLINE: Duration = Duration::from_secs(10);
/// `Strict-Transport-Security` of every answer over TLS (API and console).
const HSTS: &str = "max-age=31536000";

pub struct Server {
    local_addr: SocketAddr,
    store: Arc<Store>,
    stop: watch::Sender<bool>,
    accept_loop: JoinHandle<()>,
    admin_loop: JoinHandle<()>,
    dispatcher: JoinHandle<()>,
    scheduler: JoinHandle<()>,
    /// Publishes the commits' changes in windows (`store::changes`).
    changes: JoinHandle<()>,
    socket_path: PathBuf,
    certs: Option<Arc<tls::CertStore>>,
    /// The bound on argon2 work (sign-ins, new passwords).
    passwords: Arc<crate::domain::people::passwords::Work>,
    /// Continuous replication, when `[replica]` is set.
    replica: Option<crate::replica::Running>,
}

impl Server {
    /// Starts the server: the store opened, the listeners bound, every task running.
    ///
    /// Boxed on purpose: an `async fn`'s body is compiled again in every crate that
    /// awaits it, and this one's reaches every task of the server (the router, the
    /// console, the engine). A test or bench binary that awaited it as an `async fn`
    /// compiled the whole server again at its own optimization level (a minute of each
    /// bench binary's build); through the box it links the library's copy.
    pub fn start(
        config: Config,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<Server, String>> + Send>> {
        Box::pin(Self::start_here(config))
    }

    async fn start_here(config: Config) -> Result<Server, String> {
        crate::config::create_data_dir(&config.data_dir)?;
        let db_path = config.database_path();
        let cache = config.cache_mib.saturating_mul(1024 * 1024);
        // The store's writer thread logs where this task does (see `store::writer`).
        let logs = tracing::dispatcher::get_default(|d| d.clone());
        let open = move || Store::open_with_cache(&db_path, cache);
        let store =
            tokio::task::spawn_blocking(move || tracing::dispatcher::with_default(&logs, open))
                .await
                .map_err(|e| format!("opening the store: {e}"))?
                .map_err(|e| match e {
                    OpenError::InUse => format!(
                        "{} is in use by another process (is another `engaged serve` running?)",
                        config.database_path().display()
                    ),
                    OpenError::Other(msg) | OpenError::Refused(msg) => msg,
                })?;
        let store = Arc::new(store);
        // Before any request: every batch from here on reaches the replica.
        let replica = match &config.replica {
            Some(settings) => Some(crate::replica::start(
                store.clone(),
                settings,
                &config.data_dir,
            )?),
            None => None,
        };

        let certs = if config.insecure_http {
            None
        } else {
            let (cert, key) = tls::paths(&config)?;
            Some(tls::CertStore::load(&cert, &key)?)
        };
        let tls = match &certs {
            Some(certs) => Some(TlsAcceptor::from(tls::server_config(certs.clone())?)),
            None => None,
        };
        let listener = limits::listen(config.listen, config.limits.max_connections)
            .map_err(|e| format!("cannot listen on {}: {e}", config.listen))?;
        let local_addr = listener.local_addr().map_err(|e| e.to_string())?;
        let (admin_listener, socket_path) = admin_socket::bind(&config.data_dir)?;

        let recordings = startup::prepare_recordings(&store, &config).await?;
        startup::prepare_engine(&store).await?;
        let console = startup::console_url(&config, local_addr);
        startup::first_run(&store, &console).await?;
        let http = crate::http_client::HttpClient::with_policy(
            config.webhooks.timeout,
            config.outbound_ca_file.as_deref(),
            crate::outbound_address::OutboundPolicy::new(config.outbound_allow_private),
        )?;
        let engine = Arc::new(
            crate::engine::Engine::new(
                store.clone(),
                http.clone(),
                Arc::default(),
                config.public_url.clone(),
                config.recording_max_bytes,
            )
            .with_calendar_retry_schedule(config.webhooks.retry_schedule.clone()),
        );
        let passwords = Arc::new(crate::domain::people::passwords::Work::for_machine());
        let state = Arc::new(AppState {
            store: store.clone(),
            max_body_bytes: config.max_body_bytes,
            body_pace: crate::api::request::BodyPace {
                timeout: config.limits.body_read_timeout,
                min_bytes_per_second: config.limits.body_min_bytes_per_second,
                upload_min_bytes_per_second: config.limits.recording_min_bytes_per_second,
            },
            body_phase: crate::api::body_phase::BodyPhase::new(
                config.limits.max_connections,
                config.limits.max_connections_per_ip,
            ),
            metrics: Arc::default(),
            replica: replica.as_ref().map(|r| r.status.clone()),
            engine: engine.clone(),
            rate_limiter: config.limits.rate_limit_per_second.map(|rate| {
                crate::api::rate_limit::RateLimiter::new(rate, config.limits.rate_limit_burst)
            }),
            recordings,
            sign_in_throttle: Default::default(),
            flash: Default::default(),
            webchat: Default::default(),
            passwords: passwords.clone(),
            imports: crate::domain::import::Limits {
                max_bytes: config.max_import_bytes,
                quota_bytes: config.import_quota_bytes,
            },
        });
        let (stop, stopped) = watch::channel(false);
        let dispatcher = crate::webhooks::dispatcher::Dispatcher::new(
            store.clone(),
            config.webhooks.clone(),
            http,
        )?;
        let dispatcher = tokio::spawn(dispatcher.run(stopped.clone()));
        let scheduler = tokio::spawn(engine.run(stopped.clone()));
        let changes = tokio::spawn(store.changes().clone().run(stopped.clone()));
        tokio::spawn(startup::sweep_imports(
            config.data_dir.clone(),
            stopped.clone(),
        ));
        let accept_loop = tokio::spawn(accept_loop(
            listener,
            tls,
            state,
            config.limits.clone(),
            stopped,
        ));
        let admin_loop = tokio::spawn(admin_socket::serve(admin_listener, store.clone()));
        let scheme = if config.insecure_http {
            "http"
        } else {
            "https"
        };
        tracing::info!(address = %format!("{scheme}://{local_addr}"), data_dir = %config.data_dir.display(), %console, "listening");
        Ok(Server {
            local_addr,
            store,
            stop,
            accept_loop,
            admin_loop,
            dispatcher,
            scheduler,
            changes,
            socket_path,
            certs,
            passwords,
            replica,
        })
    }

    /// Loads the certificate files again for new connections (SIGHUP).
    pub fn reload_tls(&self) -> Result<(), String> {
        match &self.certs {
            Some(certs) => certs.reload(),
            None => Ok(()),
        }
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    pub fn store(&self) -> &Arc<Store> {
        &self.store
    }

    /// The bound on the server's argon2 work.
    pub fn passwords(&self) -> &Arc<crate::domain::people::passwords::Work> {
        &self.passwords
    }

    /// Stops accepting, lets in-flight requests finish (bounded), and flushes the writer.
    pub async fn shutdown(self) {
        let _ = self.stop.send(true);
        let _ = self.accept_loop.await;
        // Requests are done; attempts in flight get a short grace, the rest stays queued.
        let _ = self.dispatcher.await;
        let _ = self.scheduler.await;
        let _ = self.changes.await;
        self.admin_loop.abort();
        let _ = std::fs::remove_file(&self.socket_path);
        let store = self.store.clone();
        let _ = tokio::task::spawn_blocking(move || store.shutdown()).await;
        // The writer stopped: the replica's last upload holds every batch.
        if let Some(replica) = self.replica {
            replica.finish().await;
        }
    }
}

/// `engaged serve`: runs until SIGTERM or SIGINT; SIGHUP reloads the certificate.
pub async fn serve(config: Config) -> Result<(), String> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut terminate =
        signal(SignalKind::terminate()).map_err(|e| format!("cannot watch SIGTERM: {e}"))?;
    let mut interrupt =
        signal(SignalKind::interrupt()).map_err(|e| format!("cannot watch SIGINT: {e}"))?;
    let mut hangup =
        signal(SignalKind::hangup()).map_err(|e| format!("cannot watch SIGHUP: {e}"))?;
    let server = Server::start(config).await?;
    // Under systemd (Type=notify) the unit becomes active only now that we listen.
    notify(&[sd_notify::NotifyState::Ready]);
    loop {
        tokio::select! {
            _ = terminate.recv() => break,
            _ = interrupt.recv() => break,
            _ = hangup.recv() => {
                notify(&[sd_notify::NotifyState::Reloading]);
                match server.reload_tls() {
                    Ok(()) => tracing::info!("reloaded the TLS certificate"),
                    Err(e) => tracing::error!(error = %e, "TLS reload failed; keeping the old certificate"),
                }
                notify(&[sd_notify::NotifyState::Ready]);
            }
        }
    }
    tracing::info!("stopping");
    notify(&[sd_notify::NotifyState::Stopping]);
    server.shutdown().await;
    tracing::info!("stopped");
    Ok(())
}

fn notify(state: &[sd_notify::NotifyState]) {
    if let Err(e) = sd_notify::notify(false, state) {
        tracing::warn!(error = %e, "cannot notify systemd");
    }
}

async fn accept_loop(
    listener: TcpListener,
    tls: Option<TlsAcceptor>,
    state: Arc<AppState>,
    limits: Limits,
    mut stopped: watch::Receiver<bool>,
) {
    let graceful = GracefulShutdown::new();
    let mut builder = auto::Builder::new(TokioExecutor::new());
    // hyper restarts the header timer whenever it waits for a request, so it also
    // closes HTTP/1.1 keep-alive connections left idle that long.
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout)
        .keep_alive(true);
    // HTTP/2: ping idle connections and drop peers that stop answering.
    builder
        .http2()
        .timer(TokioTimer::new())
        .keep_alive_interval(Some(limits.header_read_timeout))
        .keep_alive_timeout(Duration::from_secs(20))
        .max_concurrent_streams(256);
    let protocols = Arc::new(Protocols {
        http1: builder.clone().http1_only(),
        http2: builder.clone().http2_only(),
        any: builder,
        first_bytes_timeout: limits.header_read_timeout,
    });
    let connections = Arc::new(Semaphore::new(limits.max_connections));
    let per_address = PerAddress::new(limits.max_connections_per_ip);
    let unheaded = Unheaded::new(limits.max_connections);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(pair) => pair,
                Err(e) => {
                    // Out of file descriptors and the like: back off instead of spinning.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = stopped.changed() => break,
        };
        // One address at its cap: close at once, so it never holds a slot it may not have.
        let Some(address_slot) = per_address.admit(peer.ip()) else {
            tracing::debug!(%peer, "connection refused: its address holds max_connections_per_ip");
            drop(stream);
            continue;
        };
        // A full table makes room by closing its oldest connection without a request
        // head; when every connection carries requests, this one waits for a free slot
        // and the next clients wait in the kernel's backlog.
        let permit = match connections.clone().try_acquire_owned() {
            Ok(permit) => permit,
            Err(TryAcquireError::Closed) => break,
            Err(TryAcquireError::NoPermits) => {
                if unheaded.evict_oldest() {
                    tracing::debug!(
                        "closed the oldest connection without a request head to make room"
                    );
                }
                tokio::select! {
                    permit = connections.clone().acquire_owned() => match permit {
                        Ok(p) => p,
                        Err(_) => break,
                    },
                    _ = stopped.changed() => break,
                }
            }
        };
        let (unheaded_slot, evicted) = unheaded.admit();
        let _ = stream.set_nodelay(true);
        let tls = tls.clone();
        let state = state.clone();
        let protocols = protocols.clone();
        let watcher = graceful.watcher();
        tokio::spawn(async move {
            let slot = Arc::new(unheaded_slot);
            // Only a sent `()` closes: a dropped sender means the head came.
            let closed = async {
                if evicted.await.is_err() {
                    std::future::pending::<()>().await;
                }
            };
            tokio::select! {
                served = serve_connection(stream, tls, state, protocols, watcher, slot.clone()) => {
                    if let Err(e) = served {
                        tracing::debug!(%peer, error = %e, "connection ended with an error");
                    }
                }
                () = closed => {
                    tracing::debug!(%peer, "connection closed before its request head, to make room");
                }
            }
            drop(slot);
            drop(address_slot);
            drop(permit);
        });
    }
    drop(listener);
    if tokio::time::timeout(DRAIN_DEADLINE, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!("some connections did not finish before the deadline");
    }
}

/// The connection builders: by ALPN over TLS, by sniffing the preface in plain HTTP.
struct Protocols {
    any: auto::Builder<TokioExecutor>,
    http1: auto::Builder<TokioExecutor>,
    http2: auto::Builder<TokioExecutor>,
    /// How long a plain-HTTP client may take to send its first bytes.
    first_bytes_timeout: Duration,
}

async fn serve_connection(
    stream: TcpStream,
    tls: Option<TlsAcceptor>,
    state: Arc<AppState>,
    protocols: Arc<Protocols>,
    watcher: hyper_util::server::graceful::Watcher,
    unheaded: Arc<UnheadedSlot>,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let peer = stream
        .peer_addr()
        .map(|a| a.ip())
        .unwrap_or(std::net::IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED));
    // Every answer over TLS tells browsers to come back over HTTPS only (a year).
    let hsts = tls.is_some();
    let service = service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
        // hyper calls the service once a request's head is complete.
        unheaded.headed();
        let state = state.clone();
        async move {
            let answered = if crate::console::is_console_path(req.uri().path()) {
                crate::console::handle(state, req, peer).await
            } else {
                api::handle(state, req, peer).await
            };
            answered.map(|mut response| {
                if hsts {
                    response.headers_mut().insert(
                        hyper::header::STRICT_TRANSPORT_SECURITY,
                        hyper::header::HeaderValue::from_static(HSTS),
                    );
                }
                response
            })
        }
    });
    match tls {
        Some(acceptor) => {
            if tokio::time::timeout(HANDSHAKE_TIMEOUT, plaintext::starts_plain(&stream)).await?? {
                return Ok(plaintext::answer(stream).await?);
            }
            let stream = tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await??;
            // Choosing by ALPN: HTTP/2 skips protocol sniffing, whose read has no timeout
            // of its own, and its timeouts then cover a silent client. HTTP/1.1 serves
            // upgrades (the relay's WebSocket, `api::relay`), which always sniff: its
            // first bytes are held to the header timeout by `FirstBytes`.
            if stream.get_ref().1.alpn_protocol() == Some(b"h2") {
                let conn = protocols
                    .http2
                    .serve_connection(TokioIo::new(stream), service);
                watcher.watch(conn.into_owned()).await
            } else {
                let stream = FirstBytes::new(stream, protocols.first_bytes_timeout);
                let conn = protocols
                    .http1
                    .serve_connection_with_upgrades(TokioIo::new(stream), service);
                watcher.watch(conn.into_owned()).await
            }
        }
        None => {
            let mut first = [0u8; 1];
            tokio::time::timeout(protocols.first_bytes_timeout, stream.peek(&mut first)).await??;
            let conn = protocols
                .any
                .serve_connection_with_upgrades(TokioIo::new(stream), service);
            watcher.watch(conn.into_owned()).await
        }
    }
}
