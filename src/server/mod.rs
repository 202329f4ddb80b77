//! The server: listeners, TLS, HTTP/1.1 and HTTP/2 connections, and an orderly stop.
//!
//! [`Server::start`] opens the store, binds the TCP listener and the admin socket, and
//! spawns the accept loop; tests use it directly on an ephemeral port. [`serve`] is
//! `engaged serve`: start, wait for SIGTERM or SIGINT, stop. Stopping closes the
//! listener, lets connections finish their requests for a while, then drains the
//! writer, so every acknowledged write is on disk when the process exits.

mod admin_socket;
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
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_rustls::TlsAcceptor;

use crate::api::{self, AppState};
use crate::config::Config;
use crate::store::{OpenError, Store};

/// How long a TLS handshake or a request's headers may take.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(30);
/// How long in-flight requests get to finish on shutdown.
const DRAIN_DEADLINE: Duration = Duration::from_secs(10);

pub struct Server {
    local_addr: SocketAddr,
    store: Arc<Store>,
    stop: watch::Sender<bool>,
    accept_loop: JoinHandle<()>,
    admin_loop: JoinHandle<()>,
    dispatcher: JoinHandle<()>,
    socket_path: PathBuf,
}

impl Server {
    pub async fn start(config: Config) -> Result<Server, String> {
        create_private_dir(&config.data_dir)?;
        let db_path = config.database_path();
        let store = tokio::task::spawn_blocking(move || Store::open(&db_path))
            .await
            .map_err(|e| format!("opening the store: {e}"))?
            .map_err(|e| match e {
                OpenError::InUse => format!(
                    "{} is in use by another process (is another `engaged serve` running?)",
                    config.database_path().display()
                ),
                OpenError::Other(msg) => msg,
            })?;
        let store = Arc::new(store);

        let tls = if config.insecure_http {
            None
        } else {
            let (cert, key) = tls::paths(&config)?;
            Some(TlsAcceptor::from(tls::server_config(&cert, &key)?))
        };
        let listener = TcpListener::bind(config.listen)
            .await
            .map_err(|e| format!("cannot listen on {}: {e}", config.listen))?;
        let local_addr = listener.local_addr().map_err(|e| e.to_string())?;
        let (admin_listener, socket_path) = admin_socket::bind(&config.data_dir)?;

        let state = Arc::new(AppState {
            store: store.clone(),
            max_body_bytes: config.max_body_bytes,
            metrics: Arc::default(),
        });
        let (stop, stopped) = watch::channel(false);
        let dispatcher =
            crate::webhooks::dispatcher::Dispatcher::new(store.clone(), config.webhooks.clone())?;
        let dispatcher = tokio::spawn(dispatcher.run(stopped.clone()));
        let accept_loop = tokio::spawn(accept_loop(listener, tls, state, stopped));
        let admin_loop = tokio::spawn(admin_socket::serve(admin_listener, store.clone()));
        let scheme = if config.insecure_http {
            "http"
        } else {
            "https"
        };
        tracing::info!(address = %format!("{scheme}://{local_addr}"), data_dir = %config.data_dir.display(), "listening");
        Ok(Server {
            local_addr,
            store,
            stop,
            accept_loop,
            admin_loop,
            dispatcher,
            socket_path,
        })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    pub fn store(&self) -> &Arc<Store> {
        &self.store
    }

    /// Stops accepting, lets in-flight requests finish (bounded), and flushes the writer.
    pub async fn shutdown(self) {
        let _ = self.stop.send(true);
        let _ = self.accept_loop.await;
        // Requests are done; attempts in flight get a short grace, the rest stays queued.
        let _ = self.dispatcher.await;
        self.admin_loop.abort();
        let _ = std::fs::remove_file(&self.socket_path);
        let store = self.store.clone();
        let _ = tokio::task::spawn_blocking(move || store.shutdown()).await;
    }
}

/// `engaged serve`: runs until SIGTERM or SIGINT.
pub async fn serve(config: Config) -> Result<(), String> {
    let server = Server::start(config).await?;
    wait_for_signal().await;
    tracing::info!("stopping");
    server.shutdown().await;
    tracing::info!("stopped");
    Ok(())
}

async fn wait_for_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    match signal(SignalKind::terminate()) {
        Ok(mut term) => {
            tokio::select! {
                _ = term.recv() => {}
                _ = tokio::signal::ctrl_c() => {}
            }
        }
        Err(e) => {
            tracing::warn!(error = %e, "cannot watch SIGTERM; stopping on SIGINT only");
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

async fn accept_loop(
    listener: TcpListener,
    tls: Option<TlsAcceptor>,
    state: Arc<AppState>,
    mut stopped: watch::Receiver<bool>,
) {
    let graceful = GracefulShutdown::new();
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_READ_TIMEOUT)
        .keep_alive(true);
    builder.http2().timer(TokioTimer::new());
    let builder = Arc::new(builder);
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
        let _ = stream.set_nodelay(true);
        let tls = tls.clone();
        let state = state.clone();
        let builder = builder.clone();
        let watcher = graceful.watcher();
        tokio::spawn(async move {
            if let Err(e) = serve_connection(stream, tls, state, builder, watcher).await {
                tracing::debug!(%peer, error = %e, "connection ended with an error");
            }
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

async fn serve_connection(
    stream: TcpStream,
    tls: Option<TlsAcceptor>,
    state: Arc<AppState>,
    builder: Arc<auto::Builder<TokioExecutor>>,
    watcher: hyper_util::server::graceful::Watcher,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let service = service_fn(move |req| api::handle(state.clone(), req));
    match tls {
        Some(acceptor) => {
            let stream = tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await??;
            let conn = builder
                .serve_connection(TokioIo::new(stream), service)
                .into_owned();
            watcher.watch(conn).await
        }
        None => {
            let conn = builder
                .serve_connection(TokioIo::new(stream), service)
                .into_owned();
            watcher.watch(conn).await
        }
    }
}

fn create_private_dir(dir: &std::path::Path) -> Result<(), String> {
    use std::os::unix::fs::DirBuilderExt;
    if dir.exists() {
        return Ok(());
    }
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| format!("cannot create {}: {e}", dir.display()))
}
