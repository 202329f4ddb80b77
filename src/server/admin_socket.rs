//! The admin socket: how `engaged org|key ...` reaches a running server.
//!
//! One JSON request per line in, one JSON `AdminResponse` per line out. The socket file
//! is created mode 0600 in the data directory; only the server's own user can use it.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};

use crate::admin::{self, AdminRequest, AdminResponse};
use crate::store::Store;

/// Requests are a few hundred bytes; anything far larger is not ours.
const MAX_REQUEST: u64 = 64 * 1024;

pub fn bind(data_dir: &Path) -> Result<(UnixListener, PathBuf), String> {
    let path = data_dir.join(admin::SOCKET_NAME);
    // We hold the database lock, so a socket file left here belongs to a dead server.
    if path.exists() {
        std::fs::remove_file(&path)
            .map_err(|e| format!("cannot remove stale {}: {e}", path.display()))?;
    }
    let listener =
        UnixListener::bind(&path).map_err(|e| format!("cannot bind {}: {e}", path.display()))?;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))
        .map_err(|e| format!("cannot restrict {}: {e}", path.display()))?;
    Ok((listener, path))
}

pub async fn serve(listener: UnixListener, store: Arc<Store>) {
    loop {
        match listener.accept().await {
            Ok((stream, _)) => {
                let store = store.clone();
                tokio::spawn(async move {
                    if let Err(e) = answer(stream, &store).await {
                        tracing::warn!(error = %e, "admin socket connection failed");
                    }
                });
            }
            Err(e) => {
                tracing::warn!(error = %e, "admin socket accept failed");
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
        }
    }
}

async fn answer(stream: UnixStream, store: &Arc<Store>) -> std::io::Result<()> {
    let (read, mut write) = stream.into_split();
    let mut line = String::new();
    let mut reader = BufReader::new(read);
    (&mut reader).take(MAX_REQUEST).read_line(&mut line).await?;
    let answer = match serde_json::from_str::<AdminRequest>(&line) {
        // The file follows the request line on the same connection.
        Ok(request @ AdminRequest::Import { .. }) => admin::import(store, &request, reader)
            .await
            .and_then(|report| {
                let mut value = serde_json::to_value(&report)
                    .map_err(|e| crate::error::Error::Internal(format!("the report: {e}")))?;
                // The command runs on this machine: it names the refused rows' file.
                if let Some(file) = &report.refused_file {
                    value["refusedFile"] = file.display().to_string().into();
                }
                Ok(value)
            }),
        Ok(request) => admin::run(store, request).await,
        Err(e) => Err(crate::error::Error::BadRequest(format!(
            "bad admin request: {e}"
        ))),
    };
    let response = match answer {
        Ok(value) => AdminResponse {
            ok: Some(value),
            error: None,
        },
        Err(e) => AdminResponse {
            ok: None,
            error: Some(e.to_string_for_logs()),
        },
    };
    let mut bytes = serde_json::to_vec(&response)?;
    bytes.push(b'\n');
    write.write_all(&bytes).await?;
    write.shutdown().await
}
